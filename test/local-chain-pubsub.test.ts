/**
 * The local chain's PubSub port on the wire, with a plain WebSocket client: Agave's messages and
 * refusals, notifications per commitment, ping and pong, clean close, the Host check, and the
 * bounds (connections, subscriptions per connection, message size, a client that stops reading),
 * each refusal counted.
 */
import {
  type Blockhash,
  generateKeyPairSigner,
  getBase58Decoder,
  getBase64EncodedWireTransaction,
  getSignatureFromTransaction,
  type KeyPairSigner,
} from "@solana/kit";
import { getTransferSolInstruction } from "@solana-program/system";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import type { LocalChainPubSubLimits } from "../src/config.ts";
import type { RawAccount } from "../src/local-chain/index.ts";
import { type RunningLocalChain, startLocalChain } from "../src/local-chain/index.ts";
import { loadCatalog } from "../src/token/catalog.ts";
import { createChainClient, signedTransaction } from "./support/chain-client.ts";

const catalog = loadCatalog();
const SLOT_MS = 20;

interface Client {
  readonly ws: WebSocket;
  /** The next notification (or answer without an id) not yet taken, parsed. */
  next(): Promise<Record<string, unknown>>;
  /** Sends a request and returns its answer, matched by id. */
  call(method: string, params?: unknown[]): Promise<Record<string, unknown>>;
  closed: Promise<{ code: number; reason: string }>;
}

let nextId = 1;
async function connect(
  url: string,
  headers?: Record<string, string>,
  /** The client's own address: 127.0.0.2 and on are this machine too (Linux routes 127/8 to lo). */
  localAddress?: string,
): Promise<Client> {
  const ws = new WebSocket(url, {
    ...(headers === undefined ? {} : { headers }),
    ...(localAddress === undefined ? {} : { localAddress }),
  });
  const queue: Record<string, unknown>[] = [];
  const waiters: ((message: Record<string, unknown>) => void)[] = [];
  const answers = new Map<unknown, (message: Record<string, unknown>) => void>();
  ws.on("message", (data) => {
    const message = JSON.parse(String(data)) as Record<string, unknown>;
    const answer = answers.get(message.id);
    if (answer !== undefined) {
      answers.delete(message.id);
      answer(message);
      return;
    }
    const waiter = waiters.shift();
    if (waiter === undefined) queue.push(message);
    else waiter(message);
  });
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    ws.on("close", (code, reason) => resolve({ code, reason: String(reason) })),
  );
  await new Promise<void>((resolve, reject) => {
    ws.once("open", () => resolve());
    ws.once("error", reject);
    ws.once("unexpected-response", (_req, res) => reject(new Error(`HTTP ${res.statusCode}`)));
  });
  return {
    ws,
    closed,
    next() {
      const queued = queue.shift();
      if (queued !== undefined) return Promise.resolve(queued);
      return new Promise((resolve) => waiters.push(resolve));
    },
    call(method, params) {
      const id = nextId++;
      const answer = new Promise<Record<string, unknown>>((resolve) => answers.set(id, resolve));
      ws.send(JSON.stringify({ jsonrpc: "2.0", id, method, ...(params === undefined ? {} : { params }) }));
      return answer;
    },
  };
}

const subscriptionOf = async (client: Client, method: string, params?: unknown[]) => {
  const answer = await client.call(method, params);
  expect(answer, method).toMatchObject({ jsonrpc: "2.0", result: expect.any(Number) });
  return answer.result as number;
};

const account = (data: Uint8Array, owner: string, lamports = 1_000_000n): RawAccount =>
  ({ lamports, data, programAddress: owner, executable: false }) as unknown as RawAccount;

describe("the PubSub port", () => {
  let local: RunningLocalChain;
  let url: string;
  const rejected: string[] = [];

  beforeAll(async () => {
    local = await startLocalChain({
      catalog,
      port: 0,
      statePath: undefined,
      slotMs: SLOT_MS,
      onRejected: (reason) => rejected.push(reason),
    });
    url = local.pubsub?.url as string;
  });
  afterAll(async () => {
    await local?.close();
  });

  it("listens on the RPC port + 1, on 127.0.0.1", () => {
    const rpcPort = Number(new URL(local.url as string).port);
    expect(url).toBe(`ws://127.0.0.1:${rpcPort + 1}`);
  });

  it("signatureSubscribe: a received notification, then the signature's, then the subscription is gone", async () => {
    const chain = createChainClient(local.url as string);
    const payer = await generateKeyPairSigner();
    await chain.airdrop(payer.address, 1n);
    const client = await connect(url);
    // The signature is known before sending: sign, subscribe, then send.
    const { value: blockhash } = await chain.rpc.getLatestBlockhash({ commitment: "confirmed" }).send();
    const { signature, wire } = await signedTransfer(payer, blockhash);
    const id = await subscriptionOf(client, "signatureSubscribe", [
      signature,
      { commitment: "confirmed", enableReceivedNotification: true },
    ]);
    await chain.rpc.sendTransaction(wire, { encoding: "base64" }).send();
    expect(await client.next()).toEqual({
      jsonrpc: "2.0",
      method: "signatureNotification",
      params: {
        result: { context: { slot: expect.any(Number) }, value: "receivedSignature" },
        subscription: id,
      },
    });
    const landed = await client.next();
    expect(landed).toEqual({
      jsonrpc: "2.0",
      method: "signatureNotification",
      params: { result: { context: { slot: expect.any(Number) }, value: { err: null } }, subscription: id },
    });
    expect(await client.call("signatureUnsubscribe", [id])).toMatchObject({
      error: { code: -32602, message: "Invalid subscription id." },
    });
    // Subscribed after it landed: told at once, after the subscription's own answer.
    const late = await subscriptionOf(client, "signatureSubscribe", [signature, { commitment: "processed" }]);
    expect(await client.next()).toMatchObject({
      params: { subscription: late, result: { value: { err: null } } },
    });
    client.ws.close();
  });

  it("accountSubscribe and programSubscribe with filters: Agave's notifications, in the asked encoding", async () => {
    const client = await connect(url);
    const owner = (await generateKeyPairSigner()).address;
    const target = (await generateKeyPairSigner()).address;
    const data = Uint8Array.from([1, 2, 3, 4, 5, 6, 7, 8]);
    const skipped = await subscriptionOf(client, "programSubscribe", [
      owner,
      { commitment: "confirmed", encoding: "base64", filters: [{ dataSize: 9 }] },
    ]);
    const matching = await subscriptionOf(client, "programSubscribe", [
      owner,
      {
        commitment: "confirmed",
        encoding: "base64",
        filters: [
          { dataSize: 8 },
          { memcmp: { offset: 1, bytes: getBase58Decoder().decode(data.subarray(1, 3)) } },
        ],
      },
    ]);
    const direct = await subscriptionOf(client, "accountSubscribe", [
      target,
      { commitment: "confirmed", encoding: "base58" },
    ]);
    expect(new Set([skipped, matching, direct]).size).toBe(3);
    local.chain.setAccount(target, account(data, owner));
    // Written in the working slot; a confirmed subscriber hears of it once that slot is confirmed.
    const slot = local.chain.slot("processed");
    const accountJson = {
      lamports: 1_000_000,
      owner,
      executable: false,
      // u64::MAX, as JSON.parse reads it.
      rentEpoch: 2 ** 64,
      space: 8,
    };
    expect(await client.next()).toEqual({
      jsonrpc: "2.0",
      method: "accountNotification",
      params: {
        result: {
          context: { slot },
          value: { data: [getBase58Decoder().decode(data), "base58"], ...accountJson },
        },
        subscription: direct,
      },
    });
    // The filtered-out subscription was made first: had it been told, its notification would come first.
    expect(await client.next()).toEqual({
      jsonrpc: "2.0",
      method: "programNotification",
      params: {
        result: {
          context: { slot },
          value: {
            pubkey: target,
            account: { data: [Buffer.from(data).toString("base64"), "base64"], ...accountJson },
          },
        },
        subscription: matching,
      },
    });
    // Past base58's 128 bytes, Agave's encoder sends a marker in place of the data.
    local.chain.setAccount(target, account(new Uint8Array(200), owner));
    expect(await client.next()).toMatchObject({
      method: "accountNotification",
      params: {
        result: { value: { data: ["error: data too large for bs58 encoding", "base58"], space: 200 } },
      },
    });
    expect(await client.call("programUnsubscribe", [matching])).toMatchObject({ result: true });
    expect(await client.call("accountUnsubscribe", [direct])).toMatchObject({ result: true });
    client.ws.close();
  });

  it("a finalized subscription hears of a change once its slot is finalized, with the account as it was then", async () => {
    const client = await connect(url);
    const target = (await generateKeyPairSigner()).address;
    const owner = (await generateKeyPairSigner()).address;
    const finalized = await subscriptionOf(client, "accountSubscribe", [target, { encoding: "base64" }]);
    const confirmed = await subscriptionOf(client, "accountSubscribe", [
      target,
      { encoding: "base64", commitment: "confirmed" },
    ]);
    local.chain.setAccount(target, account(Uint8Array.of(1), owner, 5n));
    const written = local.chain.slot("processed");
    local.chain.setAccount(target, account(Uint8Array.of(2), owner, 6n));
    const first = await client.next();
    expect(first).toMatchObject({ params: { subscription: confirmed, result: { value: { lamports: 5 } } } });
    expect(await client.next()).toMatchObject({
      params: { subscription: confirmed, result: { value: { lamports: 6 } } },
    });
    // The chain produces its slots on its own while anything is subscribed: nobody calls the RPC port.
    const late = await client.next();
    expect(late).toMatchObject({
      params: { subscription: finalized, result: { context: { slot: written }, value: { lamports: 5 } } },
    });
    expect(local.chain.slot("finalized")).toBeGreaterThanOrEqual(written);
    expect(await client.next()).toMatchObject({
      params: { subscription: finalized, result: { value: { lamports: 6 } } },
    });
    client.ws.close();
  });

  it("logsSubscribe: every transaction, or those that mention an address", async () => {
    const chain = createChainClient(local.url as string);
    const payer = await generateKeyPairSigner();
    const client = await connect(url);
    const all = await subscriptionOf(client, "logsSubscribe", ["all", { commitment: "processed" }]);
    await chain.airdrop(payer.address, 1n);
    const airdrop = await client.next();
    expect(airdrop).toEqual({
      jsonrpc: "2.0",
      method: "logsNotification",
      params: {
        result: {
          context: { slot: expect.any(Number) },
          value: {
            signature: expect.any(String),
            err: null,
            logs: [
              "Program 11111111111111111111111111111111 invoke [1]",
              "Program 11111111111111111111111111111111 success",
            ],
          },
        },
        subscription: all,
      },
    });
    expect(await client.call("logsUnsubscribe", [all])).toMatchObject({ result: true });
    const other = (await generateKeyPairSigner()).address;
    const mentions = await subscriptionOf(client, "logsSubscribe", [
      { mentions: [payer.address] },
      { commitment: "confirmed" },
    ]);
    await subscriptionOf(client, "logsSubscribe", [{ mentions: [other] }, { commitment: "confirmed" }]);
    await chain.sendAndConfirm(payer, [
      getTransferSolInstruction({ source: payer, destination: payer.address, amount: 1n }),
    ]);
    expect(await client.next()).toMatchObject({
      method: "logsNotification",
      params: { subscription: mentions },
    });
    client.ws.close();
  });

  it("slotSubscribe and rootSubscribe follow the chain's slots", async () => {
    const client = await connect(url);
    const slots = await subscriptionOf(client, "slotSubscribe");
    const slot = await client.next();
    expect(slot).toEqual({
      jsonrpc: "2.0",
      method: "slotNotification",
      params: {
        result: { parent: expect.any(Number), root: expect.any(Number), slot: expect.any(Number) },
        subscription: slots,
      },
    });
    const {
      parent,
      root,
      slot: at,
    } = (slot.params as { result: Record<string, number> }).result as Record<string, number>;
    expect(parent).toBe((at as number) - 1);
    // Confirmed is the slot before the working one, finalized (the root) 32 before that.
    expect(root).toBe((at as number) - 33);
    expect(await client.call("slotUnsubscribe", [slots])).toMatchObject({ result: true });
    const roots = await subscriptionOf(client, "rootSubscribe");
    // Slot notifications sent before the unsubscribe arrived may still be on their way.
    let message = await client.next();
    while (message.method === "slotNotification") message = await client.next();
    expect(message).toEqual({
      jsonrpc: "2.0",
      method: "rootNotification",
      params: { result: expect.any(Number), subscription: roots },
    });
    client.ws.close();
  });

  it("refuses bad params with Agave's codes and messages", async () => {
    const client = await connect(url);
    const key = (await generateKeyPairSigner()).address;
    const cases: [string, unknown[] | undefined, number, string][] = [
      ["accountSubscribe", ["not a key"], -32602, "Invalid Request: Invalid pubkey provided"],
      ["signatureSubscribe", ["abc"], -32602, "Invalid Request: Invalid signature provided"],
      ["logsSubscribe", [{ mentions: [key, key] }], -32602, "Invalid Request: Only 1 address supported"],
      ["logsSubscribe", [{ mentions: ["x"] }], -32602, "Invalid Request: Invalid mentions provided"],
      [
        "accountSubscribe",
        [key, { commitment: "soon" }],
        -32602,
        expect.stringContaining("unknown variant `soon`"),
      ],
      [
        "accountSubscribe",
        [key, { encoding: "json" }],
        -32602,
        expect.stringContaining("unknown variant `json`"),
      ],
      [
        "programSubscribe",
        [key, { filters: [{ size: 1 }] }],
        -32602,
        expect.stringContaining("unknown variant `size`"),
      ],
      ["accountUnsubscribe", [123_456_789], -32602, "Invalid subscription id."],
      ["accountUnsubscribe", ["1"], -32602, expect.stringContaining("invalid type")],
      ["accountSubscribe", undefined, -32602, expect.any(String)],
      ["blockSubscribe", ["all"], -32601, "Method not found"],
    ];
    for (const [method, params, code, message] of cases) {
      expect(await client.call(method, params), method).toEqual({
        jsonrpc: "2.0",
        error: { code, message },
        id: expect.any(Number),
      });
    }
    client.ws.send("{not json");
    expect(await client.next()).toEqual({
      jsonrpc: "2.0",
      error: { code: -32700, message: "Parse error" },
      id: null,
    });
    client.ws.close();
  });

  it("answers pings with pongs, ignores kit's JSON ping, and closes cleanly", async () => {
    const client = await connect(url);
    const pong = new Promise<string>((resolve) => client.ws.once("pong", (data) => resolve(String(data))));
    client.ws.ping("are you there");
    expect(await pong).toBe("are you there");
    // kit's autopinger sends a notification (no id): it gets no answer, and the connection stays.
    client.ws.send(JSON.stringify({ jsonrpc: "2.0", method: "ping" }));
    const id = await subscriptionOf(client, "slotSubscribe");
    expect(id).toBeTypeOf("number");
    client.ws.close(1000);
    expect((await client.closed).code).toBe(1000);
  });

  it("answers only the host names of this machine, as the RPC port does", async () => {
    const before = rejected.filter((r) => r === "pubsub_host").length;
    await expect(connect(url, { host: "evil.example" })).rejects.toThrow("HTTP 403");
    expect(rejected.filter((r) => r === "pubsub_host").length).toBe(before + 1);
  });
});

describe("the PubSub port's bounds", () => {
  let local: RunningLocalChain;
  let url: string;
  const rejected: string[] = [];
  const limits: LocalChainPubSubLimits = {
    maxConnections: 3,
    maxSubscriptionsPerConnection: 2,
    maxMessageBytes: 1024,
    maxBufferedBytes: 65_536,
  };
  const count = (reason: string) => rejected.filter((r) => r === reason).length;

  beforeAll(async () => {
    local = await startLocalChain({
      catalog,
      port: 0,
      statePath: undefined,
      slotMs: 400,
      pubsubLimits: limits,
      onRejected: (reason) => rejected.push(reason),
    });
    url = local.pubsub?.url as string;
  });
  afterAll(async () => {
    await local?.close();
  });

  it("refuses a connection past the bound with 503, and counts it", async () => {
    const open = await Promise.all(Array.from({ length: limits.maxConnections }, () => connect(url)));
    await expect(connect(url)).rejects.toThrow("HTTP 503");
    expect(count("pubsub_connection_limit")).toBe(1);
    for (const client of open) client.ws.close();
    await Promise.all(open.map((client) => client.closed));
  });

  it("refuses a subscription past the bound with -32603, and counts it", async () => {
    const client = await connect(url);
    await subscriptionOf(client, "slotSubscribe");
    await subscriptionOf(client, "rootSubscribe");
    expect(await client.call("slotSubscribe")).toMatchObject({
      error: { code: -32603, message: expect.stringContaining("Subscription refused") },
    });
    expect(count("pubsub_subscription_limit")).toBe(1);
    client.ws.close();
    await client.closed;
  });

  it("closes a connection that sends a message past the bound (1009), and counts it", async () => {
    const client = await connect(url);
    client.ws.send(
      JSON.stringify({ jsonrpc: "2.0", id: 1, method: "slotSubscribe", params: ["x".repeat(2000)] }),
    );
    expect((await client.closed).code).toBe(1009);
    expect(count("pubsub_message_too_large")).toBe(1);
  });

  it("holds at most 64 MiB of account states waiting for finality, dropping the oldest (counted)", async () => {
    const client = await connect(url);
    const target = (await generateKeyPairSigner()).address;
    // Finalized (the default): each write waits 32 slots (13 s here) with the account as it left it.
    await subscriptionOf(client, "accountSubscribe", [target, { encoding: "base64" }]);
    const mib = new Uint8Array(1024 * 1024);
    for (let i = 0; i < 70; i++)
      local.chain.setAccount(target, account(mib, "11111111111111111111111111111111"));
    expect(count("pubsub_waiting_limit")).toBe(70 - 64);
    client.ws.close();
    await client.closed;
  });

  it("cuts off a client that stops reading once its unsent notifications pass the bound, holding no more", async () => {
    const client = await connect(url);
    const target = (await generateKeyPairSigner()).address;
    // `processed`: told at each write. A `confirmed` subscriber hears when the next slot confirms
    // it (as on Agave), and 500 writes can all fall within one slot, so none would be sent yet.
    await subscriptionOf(client, "accountSubscribe", [
      target,
      { commitment: "processed", encoding: "base64" },
    ]);
    // The client stops reading: what the chain writes piles up in the kernel, then in the chain.
    const socket = (client.ws as unknown as { _socket: import("node:net").Socket })._socket;
    socket.pause();
    const big = new Uint8Array(512 * 1024);
    const notificationBytes = Math.ceil((big.length * 4) / 3) + 512;
    let writes = 0;
    while (count("pubsub_slow_client") === 0) {
      writes++;
      if (writes > 500) throw new Error("the slow client was never cut off");
      big[0] = writes % 256;
      local.chain.setAccount(target, account(big, "11111111111111111111111111111111"));
      const { bufferedBytes } = local.pubsub?.stats() ?? { bufferedBytes: 0 };
      // Never more than the bound and the one notification that passed it.
      expect(bufferedBytes).toBeLessThanOrEqual(limits.maxBufferedBytes + notificationBytes);
      await new Promise((resolve) => setImmediate(resolve));
    }
    socket.resume();
    expect((await client.closed).code).toBe(1006);
    expect(local.pubsub?.stats()).toMatchObject({ connections: 0, bufferedBytes: 0 });
    expect(count("pubsub_slow_client")).toBe(1);
  });
});

/** A signed transfer of 1 lamport to itself, with its signature, not yet sent. */
async function signedTransfer(
  payer: KeyPairSigner,
  blockhash: { blockhash: Blockhash; lastValidBlockHeight: bigint },
) {
  const signed = await signedTransaction(payer, blockhash, [
    getTransferSolInstruction({ source: payer, destination: payer.address, amount: 1n }),
  ]);
  return { signature: getSignatureFromTransaction(signed), wire: getBase64EncodedWireTransaction(signed) };
}

describe("each address's share of the PubSub port's subscriptions", () => {
  let local: RunningLocalChain;
  let url: string;
  const rejected: string[] = [];
  // A share of 3 each (a quarter of the node's 12): four addresses fill the node.
  const limits: LocalChainPubSubLimits = {
    maxConnections: 8,
    maxSubscriptionsPerConnection: 2,
    maxSubscriptions: 12,
    maxMessageBytes: 1024,
    maxBufferedBytes: 65_536,
  };
  const count = (reason: string) => rejected.filter((r) => r === reason).length;
  const open: Client[] = [];
  /** Two connections from `address` holding its share of 3. */
  const fillShare = async (address: string) => {
    const first = await connect(url, undefined, address);
    const second = await connect(url, undefined, address);
    open.push(first, second);
    await subscriptionOf(first, "slotSubscribe");
    await subscriptionOf(first, "rootSubscribe");
    await subscriptionOf(second, "slotSubscribe");
    return second;
  };

  beforeAll(async () => {
    local = await startLocalChain({
      catalog,
      port: 0,
      statePath: undefined,
      slotMs: 400,
      pubsubLimits: limits,
      pubsubServiceToken: "a-secret-of-the-service",
      onRejected: (reason) => rejected.push(reason),
    });
    url = local.pubsub?.url as string;
  });
  afterAll(async () => {
    for (const client of open) client.ws.close();
    await local?.close();
  });

  it("refuses an address past its share saying so, with the numbers, while another address subscribes", async () => {
    const filled = await fillShare("127.0.0.1");
    // Its second connection has room of its own, but the address has none.
    expect(await filled.call("rootSubscribe")).toEqual({
      jsonrpc: "2.0",
      error: {
        code: -32603,
        message:
          "Internal Error: Subscription refused. Address subscription limit reached (the connections from 127.0.0.1 hold 3 subscriptions, at most 3 per address, LOCAL_SOLANA_PUBSUB_MAX_SUBSCRIPTIONS_PER_ADDRESS, of the 12 on this chain: unsubscribe first)",
      },
      id: expect.any(Number),
    });
    expect(count("pubsub_address_subscription_limit")).toBe(1);
    const other = await connect(url, undefined, "127.0.0.2");
    open.push(other);
    await subscriptionOf(other, "slotSubscribe");
    // Room again once the address lets one go.
    const id = await subscriptionOf(other, "rootSubscribe");
    expect(await other.call("rootUnsubscribe", [id])).toMatchObject({ result: true });
  });

  it("keeps the service's own path outside the clients' caps: the node's and the connections'", async () => {
    await subscriptionOf(open[open.length - 1] as Client, "rootSubscribe");
    await fillShare("127.0.0.3");
    await fillShare("127.0.0.4");
    const late = await connect(url, undefined, "127.0.0.5");
    open.push(late);
    await subscriptionOf(late, "slotSubscribe");
    // 3 + 2 + 3 + 3 + 1: the node's cap is reached, and so is the connection cap (8).
    expect(local.pubsub?.stats()).toMatchObject({ subscriptions: 12, connections: 8 });
    expect(await late.call("rootSubscribe")).toMatchObject({
      error: { code: -32603, message: expect.stringContaining("Node subscription limit reached") },
    });
    await expect(connect(url, undefined, "127.0.0.6")).rejects.toThrow("HTTP 503");

    const serviceUrl = local.pubsub?.serviceUrl as string;
    expect(serviceUrl).toBe(`${url}/service/a-secret-of-the-service`);
    const own = await connect(serviceUrl);
    open.push(own);
    await subscriptionOf(own, "accountSubscribe", [(await generateKeyPairSigner()).address]);
    await subscriptionOf(own, "slotSubscribe");
    // A wrong secret is a client like any other.
    await expect(connect(`${url}/service/a-guess`)).rejects.toThrow("HTTP 503");
  });
});

/**
 * The local chain's JSON-RPC port against hostile requests, on a real socket: it runs inside the
 * service's process, so a request that crashes it, blocks its event loop or makes it hold
 * gigabytes takes the service's API down with it. Every such request must get a JSON-RPC answer
 * (or a bounded refusal), and the port must serve the next request.
 */

import { connect, type Socket } from "node:net";
import {
  appendTransactionMessageInstructions,
  createTransactionMessage,
  generateKeyPairSigner,
  getBase64EncodedWireTransaction,
  pipe,
  setTransactionMessageFeePayerSigner,
  setTransactionMessageLifetimeUsingBlockhash,
  signTransactionMessageWithSigners,
} from "@solana/kit";
import { getTransferSolInstruction } from "@solana-program/system";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { DEFAULT_LOCAL_CHAIN_PORT_LIMITS } from "../src/config.ts";
import {
  createJsonRpcHandler,
  type JsonRpcHandler,
  type RunningLocalChain,
  startLocalChain,
  startLocalChainServer,
} from "../src/local-chain/index.ts";
import { loadCatalog } from "../src/token/catalog.ts";
import { useCleanups } from "./support/cleanups.ts";

const cleanup = useCleanups();
let local: RunningLocalChain;
const unexpected: { method: string; error: unknown }[] = [];

beforeAll(async () => {
  local = await startLocalChain({
    catalog: loadCatalog(),
    port: 0,
    statePath: undefined,
    slotMs: 400,
    onUnexpected: (error, method) => unexpected.push({ method, error }),
  });
});
afterAll(async () => {
  await local?.close();
});

/** POSTs a body to the chain's port; the answer's status and text. */
async function post(url: string, body: string): Promise<{ status: number; text: string }> {
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body,
    signal: AbortSignal.timeout(20_000),
  });
  return { status: response.status, text: await response.text() };
}

async function call(method: string, params: unknown[]): Promise<Record<string, unknown>> {
  const { text } = await post(local.url as string, JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }));
  return JSON.parse(text) as Record<string, unknown>;
}

/** The chain still answers: getHealth is "ok". */
async function expectServing(url = local.url as string): Promise<void> {
  const { text } = await post(url, '{"jsonrpc":"2.0","id":"next","method":"getHealth"}');
  expect(JSON.parse(text)).toEqual({ jsonrpc: "2.0", result: "ok", id: "next" });
}

describe("a request the port cannot be crashed by", () => {
  it("answers params nested 5,000 deep with a JSON-RPC error, and serves the next request", async () => {
    // The review's payload: 10 KB that once ended the whole process (the printer of `data`
    // recursed past the stack, outside the handler's try, into the server's "end" listener).
    const d = 5000;
    const body = `{"jsonrpc":"2.0","id":1,"method":"getHealth","params":[${"[".repeat(d)}${"]".repeat(d)}]}`;
    const { status, text } = await post(local.url as string, body);
    expect(status).toBe(200);
    const answer = JSON.parse(text) as { error: { code: number; message: string; data: string }; id: number };
    expect(answer.id).toBe(1);
    expect(answer.error.code).toBe(-32602);
    expect(answer.error.message).toBe("Invalid parameters: No parameters were expected");
    // The caller's params as Rust's Debug prints them, cut short where they nest too deep.
    expect(answer.error.data).toMatch(/^Array\(\[Array\(\[Array\(\[.*…/);
    expect(answer.error.data.length).toBeLessThanOrEqual(1024);
    await expectServing();
  });

  it("shows a bounded part of large params in `data`", async () => {
    const answer = await call("getHealth", ["x".repeat(100_000)]);
    const { data } = answer.error as { data: string };
    expect(data.startsWith('Array([String("xxxx')).toBe(true);
    expect(data.length).toBeLessThanOrEqual(1024);
  });

  it("answers -32603 for what a method returns that cannot be written, reported once", async () => {
    const seen: string[] = [];
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    const handler = createJsonRpcHandler({
      methods: { cyclic: () => cyclic, fine: () => 1 },
      maxBatch: 10,
      maxAnswerBytes: 1024 * 1024,
      onUnexpected: (_error, method) => seen.push(method),
    });
    const server = await startLocalChainServer({
      handler,
      port: 0,
      maxRequestBytes: 1024,
      limits: DEFAULT_LOCAL_CHAIN_PORT_LIMITS,
    });
    cleanup(() => server.close());
    const { text } = await post(
      server.url,
      '[{"jsonrpc":"2.0","id":1,"method":"cyclic"},{"jsonrpc":"2.0","id":2,"method":"fine"}]',
    );
    expect(JSON.parse(text)).toEqual([
      { jsonrpc: "2.0", error: { code: -32603, message: "Internal error" }, id: 1 },
      { jsonrpc: "2.0", result: 1, id: 2 },
    ]);
    expect(seen).toEqual(["cyclic"]);
  });

  it("answers -32603 when the handler itself fails, reports it once, and serves the next request", async () => {
    const seen: unknown[] = [];
    let fail = true;
    const real = createJsonRpcHandler({
      methods: { getHealth: () => "ok" },
      maxBatch: 10,
      maxAnswerBytes: 1024 * 1024,
    });
    const handler: JsonRpcHandler = {
      handleValue: real.handleValue,
      handle: (body) => (fail ? Promise.reject(new Error("handler broke")) : real.handle(body)),
    };
    const server = await startLocalChainServer({
      handler,
      port: 0,
      maxRequestBytes: 1024,
      limits: DEFAULT_LOCAL_CHAIN_PORT_LIMITS,
      onUnexpected: (error) => seen.push(error),
    });
    cleanup(() => server.close());
    const { status, text } = await post(server.url, '{"jsonrpc":"2.0","id":1,"method":"getHealth"}');
    expect(status).toBe(200);
    expect(JSON.parse(text)).toEqual({
      jsonrpc: "2.0",
      error: { code: -32603, message: "Internal error" },
      id: null,
    });
    expect(text).not.toContain("handler broke");
    expect(seen).toHaveLength(1);
    fail = false;
    await expectServing(server.url);
  });
});

describe("params decoded only within their bounds", () => {
  const LONG = "2".repeat(100_000);
  const USDC = "EPjFWdd5AufqSqeM2qN1xzybapC8G4wEGGkZwyTDt1v";
  const bounded = (name: string, max: number) =>
    `WrongSize (${name}: at most ${max} base58 characters, got ${LONG.length})`;

  it("refuses a 100 KB blockhash before decoding it (base58 decodes in quadratic time)", async () => {
    // Before the bound this one request held the event loop for seconds (5 s here, 14 s in review).
    expect((await call("isBlockhashValid", [LONG])).error).toEqual({
      code: -32602,
      message: bounded("blockhash", 44),
    });
    // Agave's words within the bound are kept.
    expect((await call("isBlockhashValid", ["1".repeat(44)])).error).toEqual({
      code: -32602,
      message: "WrongSize",
    });
  });

  it("refuses over-long public keys and signatures by name, wherever they are read", async () => {
    const cases: [string, unknown[], string][] = [
      ["getBalance", [LONG], `Invalid param: ${bounded("pubkey", 44)}`],
      ["getAccountInfo", [LONG], `Invalid param: ${bounded("pubkey", 44)}`],
      ["getMultipleAccounts", [[USDC, LONG]], `Invalid param: ${bounded("pubkeys[1]", 44)}`],
      ["getTokenAccountBalance", [LONG], `Invalid param: ${bounded("pubkey", 44)}`],
      ["getTokenSupply", [LONG], `Invalid param: ${bounded("mint", 44)}`],
      ["getTokenAccountsByOwner", [LONG, { mint: USDC }], `Invalid param: ${bounded("owner", 44)}`],
      ["getTokenAccountsByOwner", [USDC, { mint: LONG }], `Invalid param: ${bounded("mint", 44)}`],
      ["getTokenAccountsByOwner", [USDC, { programId: LONG }], `Invalid param: ${bounded("programId", 44)}`],
      ["getSignaturesForAddress", [LONG], `Invalid param: ${bounded("address", 44)}`],
      ["requestAirdrop", [LONG, 1], `Invalid param: ${bounded("pubkey", 44)}`],
      ["getTransaction", [LONG], `Invalid param: ${bounded("signature", 88)}`],
      ["getSignatureStatuses", [[LONG]], `Invalid param: ${bounded("signatures[0]", 88)}`],
      ["getSignaturesForAddress", [USDC, { before: LONG }], `Invalid param: ${bounded("before", 88)}`],
      ["getSignaturesForAddress", [USDC, { until: LONG }], `Invalid param: ${bounded("until", 88)}`],
    ];
    for (const [method, params, message] of cases) {
      expect((await call(method, params)).error, method).toEqual({ code: -32602, message });
    }
  });

  it("refuses over-long transactions and messages by their packet's bound", async () => {
    const cases: [string, unknown[], string][] = [
      [
        "sendTransaction",
        [LONG],
        "base58 encoded solana_transaction::versioned::VersionedTransaction too large: 100000 bytes (max: encoded/raw 1683/1232)",
      ],
      [
        "simulateTransaction",
        [LONG],
        "base58 encoded solana_transaction::versioned::VersionedTransaction too large: 100000 bytes (max: encoded/raw 1683/1232)",
      ],
      [
        "sendTransaction",
        ["A".repeat(100_000), { encoding: "base64" }],
        "base64 encoded solana_transaction::versioned::VersionedTransaction too large: 100000 bytes (max: encoded/raw 1644/1232)",
      ],
      [
        "getFeeForMessage",
        ["A".repeat(100_000)],
        "base64 encoded solana_message::versions::VersionedMessage too large: 100000 bytes (max: encoded/raw 1644/1232)",
      ],
    ];
    for (const [method, params, message] of cases) {
      expect((await call(method, params)).error, method).toEqual({ code: -32602, message });
    }
  });

  it("refuses an over-long address in simulateTransaction's accounts by name", async () => {
    const payer = await generateKeyPairSigner();
    const { result } = await call("getLatestBlockhash", []);
    const { blockhash, lastValidBlockHeight } = (
      result as { value: { blockhash: string; lastValidBlockHeight: number } }
    ).value;
    const signed = await pipe(
      createTransactionMessage({ version: 0 }),
      (m) => setTransactionMessageFeePayerSigner(payer, m),
      (m) =>
        setTransactionMessageLifetimeUsingBlockhash(
          { blockhash: blockhash as never, lastValidBlockHeight: BigInt(lastValidBlockHeight) },
          m,
        ),
      (m) =>
        appendTransactionMessageInstructions(
          [getTransferSolInstruction({ source: payer, destination: payer.address, amount: 1n })],
          m,
        ),
      (m) => signTransactionMessageWithSigners(m),
    );
    const answer = await call("simulateTransaction", [
      getBase64EncodedWireTransaction(signed),
      { encoding: "base64", accounts: { addresses: [payer.address, LONG] } },
    ]);
    expect(answer.error).toEqual({
      code: -32602,
      message: `Invalid param: ${bounded("accounts.addresses[1]", 44)}`,
    });
  });

  it("refuses an over-long cheatcode address with a bounded echo", async () => {
    const answer = await call("surfnet_setAccount", [LONG, {}]);
    expect(answer.error).toEqual({
      code: -32602,
      message: `Invalid pubkey '${"2".repeat(64)}'`,
      data: "Invalid Base58 string",
    });
    await expectServing();
  });
});

describe("answers bounded in size", () => {
  const BIG = "4Nd1mBQtrMJVYVfKf2PJy9NZUZdTAsp7D4xWLs4gDB4T";
  const MAX = DEFAULT_LOCAL_CHAIN_PORT_LIMITS.maxAnswerBytes;

  beforeAll(async () => {
    // 520 KB of data: about 693 KB as base64, so 100 of them would be a 69 MB answer.
    const set = await call("surfnet_setAccount", [
      BIG,
      { lamports: 1_000_000_000, data: "ab".repeat(520_000) },
    ]);
    expect(set.error).toBeUndefined();
  });

  const tooLarge = {
    code: -32012,
    message: expect.stringMatching(
      new RegExp(
        `^scan aborted: The accumulated scan results exceeded the limit: .* at most ${MAX} bytes; ask for less`,
      ),
    ),
  };

  it("refuses getMultipleAccounts of one big account 100 times with -32012, not a 69 MB answer", async () => {
    const { status, text } = await post(
      local.url as string,
      JSON.stringify({
        jsonrpc: "2.0",
        id: 7,
        method: "getMultipleAccounts",
        params: [Array(100).fill(BIG), { encoding: "base64" }],
      }),
    );
    expect(status).toBe(200);
    expect(text.length).toBeLessThan(1024);
    expect(JSON.parse(text)).toEqual({ jsonrpc: "2.0", error: tooLarge, id: 7 });
    // What fits is still answered.
    const fits = await call("getMultipleAccounts", [Array(5).fill(BIG), { encoding: "base64" }]);
    expect((fits.result as { value: unknown[] }).value).toHaveLength(5);
    await expectServing();
  });

  it("bounds a whole batch: the requests past the bound answer -32012, each under its own id", async () => {
    const batch = Array.from({ length: 100 }, (_, i) => ({
      jsonrpc: "2.0",
      id: i,
      method: "getAccountInfo",
      params: [BIG, { encoding: "base64" }],
    }));
    const { text } = await post(local.url as string, JSON.stringify(batch));
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(MAX);
    const answers = JSON.parse(text) as { id: number; result?: unknown; error?: unknown }[];
    expect(answers.map((a) => a.id)).toEqual(batch.map((r) => r.id));
    const answered = answers.findIndex((a) => a.error !== undefined);
    // As many as fit (11 of 693 KB in 8 MiB), then the refusal for every one after.
    expect(answered).toBeGreaterThan(0);
    expect(answers.slice(0, answered).every((a) => a.result !== undefined)).toBe(true);
    for (const refused of answers.slice(answered)) expect(refused.error).toEqual(tooLarge);
    // A small request after a refused one in the same batch still gets its answer.
    const mixed = await post(
      local.url as string,
      JSON.stringify([
        { jsonrpc: "2.0", id: "big", method: "getMultipleAccounts", params: [Array(100).fill(BIG)] },
        { jsonrpc: "2.0", id: "small", method: "getHealth" },
      ]),
    );
    expect(JSON.parse(mixed.text)).toEqual([
      { jsonrpc: "2.0", error: tooLarge, id: "big" },
      { jsonrpc: "2.0", result: "ok", id: "small" },
    ]);
    await expectServing();
  });

  it("bounds what the in-process transport is answered as well", async () => {
    const response = (await local.handler.handleValue({
      jsonrpc: "2.0",
      id: 1,
      method: "getMultipleAccounts",
      params: [Array(100).fill(BIG), { encoding: "base64" }],
    })) as { error?: unknown };
    expect(response.error).toEqual(tooLarge);
  });
});

/** An HTTP/1.1 POST of a JSON body, as raw bytes (so that several can be written at once). */
const rawPost = (body: string) =>
  `POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;

function open(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: "127.0.0.1", port });
    socket.once("connect", () => resolve(socket));
    socket.once("error", reject);
  });
}

/** Everything the socket receives until the other end closes it. */
function readUntilClosed(socket: Socket): Promise<string> {
  return new Promise((resolve) => {
    let text = "";
    socket.setEncoding("latin1");
    socket.on("data", (chunk: string) => {
      text += chunk;
    });
    socket.on("error", () => {});
    socket.once("close", () => resolve(text));
  });
}

describe("what one client can hold of the port", () => {
  const reasons: string[] = [];
  const limits = {
    maxConnections: 3,
    maxInFlightPerConnection: 4,
    writeTimeoutMs: 300,
    maxUnsentBytes: 256 * 1024 * 1024,
  };

  async function serve(overrides: Partial<typeof limits> = {}) {
    const handler = createJsonRpcHandler({
      methods: {
        getHealth: () => "ok",
        mid: () => "x".repeat(4 * 1024 * 1024),
        big: () => "x".repeat(24 * 1024 * 1024),
      },
      maxBatch: 10,
      maxAnswerBytes: 64 * 1024 * 1024,
    });
    const server = await startLocalChainServer({
      handler,
      port: 0,
      maxRequestBytes: 1024,
      limits: { ...limits, ...overrides },
      onRejected: (reason) => reasons.push(reason),
    });
    cleanup(() => server.close());
    return server;
  }

  it("cuts off an answer its client does not read within the write timeout, and keeps serving", async () => {
    const server = await serve();
    const socket = await open(server.port);
    cleanup(async () => void socket.destroy());
    // 24 MB: more than the kernel's buffers take, so the answer waits on the client, which never reads.
    socket.pause();
    socket.write(rawPost('{"jsonrpc":"2.0","id":1,"method":"big"}'));
    await vi.waitFor(() => expect(reasons).toContain("write_timeout"), { timeout: 15_000, interval: 50 });
    const rest = readUntilClosed(socket);
    socket.resume();
    const received = await rest;
    expect(received.length).toBeLessThan(24 * 1024 * 1024);
    await expectServing(server.url);
  });

  it("answers at most maxInFlightPerConnection pipelined requests, refuses the next with 429 and closes", async () => {
    // The write timeout out of the way: the client reads only once the refusal was counted.
    const server = await serve({ writeTimeoutMs: 60_000 });
    const socket = await open(server.port);
    cleanup(async () => void socket.destroy());
    // Ten requests in one write, for answers of 4 MB the client does not read yet: Node runs each
    // request it has parsed without waiting for the answers before it to be read.
    socket.pause();
    socket.write(
      Array.from({ length: 10 }, (_, i) => rawPost(`{"jsonrpc":"2.0","id":${i},"method":"mid"}`)).join(""),
    );
    await vi.waitFor(() => expect(reasons).toContain("in_flight_limit"), { timeout: 15_000, interval: 50 });
    const closed = readUntilClosed(socket);
    socket.resume();
    const statuses = [...(await closed).matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((m) => Number(m[1]));
    expect(statuses).toEqual([200, 200, 200, 200, 429]);
    await expectServing(server.url);
  });

  it("closes connections past maxConnections on arrival, and serves again once one is gone", async () => {
    const server = await serve();
    const held: Socket[] = [];
    for (let i = 0; i < limits.maxConnections; i++) {
      const socket = await open(server.port);
      cleanup(async () => void socket.destroy());
      // An answered request: the server has accepted this connection and keeps it alive.
      const answered = new Promise<void>((resolve) => socket.once("data", () => resolve()));
      socket.write(rawPost('{"jsonrpc":"2.0","id":1,"method":"getHealth"}'));
      await answered;
      held.push(socket);
    }
    const extra = await open(server.port);
    cleanup(async () => void extra.destroy());
    const closed = readUntilClosed(extra);
    extra.write(rawPost('{"jsonrpc":"2.0","id":1,"method":"getHealth"}'));
    expect(await closed).toBe("");
    expect(reasons).toContain("connection_limit");
    held[0]?.destroy();
    await vi.waitFor(() => expectServing(server.url), { timeout: 10_000, interval: 50 });
  });

  it("refuses new requests with 503 while answers its clients have not read pass maxUnsentBytes", async () => {
    const server = await serve({ writeTimeoutMs: 60_000, maxUnsentBytes: 6 * 1024 * 1024 });
    const reader = await open(server.port);
    cleanup(async () => void reader.destroy());
    reader.pause();
    reader.write(rawPost('{"jsonrpc":"2.0","id":1,"method":"big"}'));
    // Until the 24 MB answer is out, every new JSON-RPC request is turned away.
    await vi.waitFor(
      async () => {
        const response = await fetch(server.url, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: '{"jsonrpc":"2.0","id":2,"method":"getHealth"}',
        });
        expect(response.status).toBe(503);
        expect(response.headers.get("retry-after")).toBe("1");
        expect(await response.text()).toMatch(
          /^The local chain holds \d+ bytes of answers .* \(at most 6291456\)/,
        );
      },
      { timeout: 15_000, interval: 50 },
    );
    expect(reasons).toContain("unsent_limit");
    // Once the client reads (here: goes away), the port serves again.
    reader.destroy();
    await vi.waitFor(() => expectServing(server.url), { timeout: 10_000, interval: 50 });
  });
});

describe("cheatcode errors that are the caller's", () => {
  it("refuses executable: true with -32602 naming the account, and changes nothing", async () => {
    const { address } = await generateKeyPairSigner();
    expect(
      (await call("surfnet_setAccount", [address, { lamports: 5, data: "0102" }])).error,
    ).toBeUndefined();
    const reported = unexpected.length;
    const answer = await call("surfnet_setAccount", [address, { executable: true }]);
    expect(answer.error).toEqual({
      code: -32602,
      // Cheatcodes make no programs (cheatcode-refusal.ts): a loader's transactions deploy them.
      message: `Invalid params: executable: cheatcodes do not make an account executable (${address}); deploy a program with a loader's transactions.`,
    });
    // Not an internal error: nothing is reported as unexpected (the service logs those at error).
    expect(unexpected.length).toBe(reported);
    const info = await call("getAccountInfo", [address, { encoding: "base64", commitment: "processed" }]);
    expect((info.result as { value: unknown }).value).toMatchObject({
      lamports: 5,
      executable: false,
      data: ["AQI=", "base64"],
    });
  });
});

describe("CORS for pages on this machine (cors.ts; other origins: local-chain-web-guards.test.ts)", () => {
  it("answers a localhost page's preflight and answers with its own origin, never *", async () => {
    const url = local.url as string;
    const origin = "http://localhost:3000";
    const preflight = await fetch(url, {
      method: "OPTIONS",
      headers: {
        origin,
        "access-control-request-method": "POST",
        "access-control-request-headers": "content-type, solana-client",
      },
    });
    expect(preflight.status).toBe(200);
    expect(preflight.headers.get("access-control-allow-origin")).toBe(origin);
    expect(preflight.headers.get("access-control-allow-methods")).toBe("OPTIONS, POST");
    expect(preflight.headers.get("access-control-allow-headers")).toBe("content-type, solana-client");
    expect(preflight.headers.get("access-control-max-age")).toBe("86400");
    const answer = await fetch(url, {
      method: "POST",
      headers: { origin, "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "getHealth" }),
    });
    expect(answer.headers.get("access-control-allow-origin")).toBe(origin);
    expect(await answer.json()).toEqual({ jsonrpc: "2.0", result: "ok", id: 1 });
    // A refusal names the origin too, so the page can read why.
    const refused = await fetch(url, {
      method: "POST",
      headers: { origin, "content-type": "text/plain" },
      body: "{}",
    });
    expect(refused.status).toBe(415);
    expect(refused.headers.get("access-control-allow-origin")).toBe(origin);
    // Without an Origin, no CORS header, as jsonrpc-http-server does.
    const plain = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "getHealth" }),
    });
    expect(plain.headers.get("access-control-allow-origin")).toBeNull();
  });
});

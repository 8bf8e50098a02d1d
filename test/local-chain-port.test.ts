/**
 * The local chain's JSON-RPC port against hostile requests, on a real socket: it runs inside the
 * service's process, so a request that crashes it, blocks its event loop or makes it hold
 * gigabytes takes the service's API down with it. Every such request must get a JSON-RPC answer
 * (or a bounded refusal), and the port must serve the next request.
 */
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
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createJsonRpcHandler, type JsonRpcHandler } from "../src/local-chain/json-rpc-handler.ts";
import { startLocalChainServer } from "../src/local-chain/local-chain-server.ts";
import { type RunningLocalChain, startLocalChain } from "../src/local-chain/start-local-chain.ts";
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
      onUnexpected: (_error, method) => seen.push(method),
    });
    const server = await startLocalChainServer({ handler, port: 0, maxRequestBytes: 1024 });
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
    const real = createJsonRpcHandler({ methods: { getHealth: () => "ok" }, maxBatch: 10 });
    const handler: JsonRpcHandler = {
      handleValue: real.handleValue,
      handle: (body) => (fail ? Promise.reject(new Error("handler broke")) : real.handle(body)),
    };
    const server = await startLocalChainServer({
      handler,
      port: 0,
      maxRequestBytes: 1024,
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

/**
 * A seeded fuzz of the local chain's JSON-RPC port: every method with params of every wrong shape
 * (strings that are no address, numbers out of range, nested garbage, huge and negative integers),
 * and bodies that are no JSON-RPC at all. Every request must be answered, promptly, with a result or
 * a JSON-RPC error that is the caller's (never -32603 "Internal error", never an HTTP 5xx), and the
 * chain must still serve afterwards. FUZZ_SEED reproduces a run; the seed is printed.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { LOCAL_CHAIN_METHODS, type RunningLocalChain, startLocalChain } from "../src/local-chain/index.ts";
import { loadCatalog } from "../src/token/catalog.ts";
import { prng } from "./support/prng.ts";

const SEED = Number(process.env.FUZZ_SEED ?? Math.floor(Math.random() * 2 ** 31));
const PER_METHOD = Number(process.env.FUZZ_COUNT ?? 60);
const USDC = "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v";

let local: RunningLocalChain;
const unexpected: unknown[] = [];

beforeAll(async () => {
  local = await startLocalChain({
    catalog: loadCatalog(),
    port: 0,
    statePath: undefined,
    slotMs: 400,
    onUnexpected: (error, method) => unexpected.push({ method, error: String(error) }),
  });
});
afterAll(async () => {
  await local?.close();
});

it("answers every fuzzed request with a result or the caller's error", async () => {
  console.log(`local chain fuzz seed ${SEED} (FUZZ_SEED=${SEED} reproduces this run)`);
  const rng = prng(SEED);
  const value = (depth = 0): unknown => {
    switch (rng.int(depth > 2 ? 9 : 12)) {
      case 0:
        return USDC;
      case 1:
        return "1".repeat(rng.int(100));
      case 2:
        return "aaaa😀".repeat(rng.int(20));
      case 3:
        return rng.pick([0, 1, -1, 1.5, 2 ** 53, 1e308, -0]);
      case 4:
        return rng.pick(["18446744073709551616", "99999999999999999999999"]);
      case 5:
        return rng.pick([true, false, null]);
      case 6:
        return rng.pick(["base64", "jsonParsed", "base58", "confirmed", "finalized", "processed", "json"]);
      case 7:
        return "A".repeat(rng.int(3000));
      case 8:
        return rng.pick(["", "0x00ff", "zz", Buffer.from("hello").toString("base64")]);
      case 9:
        return Array.from({ length: rng.int(5) }, () => value(depth + 1));
      default: {
        const keys = [
          "encoding",
          "commitment",
          "limit",
          "before",
          "until",
          "mint",
          "programId",
          "dataSlice",
          "offset",
          "length",
          "skipPreflight",
          "sigVerify",
          "replaceRecentBlockhash",
          "accounts",
          "addresses",
          "minContextSlot",
          "maxSupportedTransactionVersion",
          "amount",
          "lamports",
          "data",
          "owner",
          "state",
          "delegate",
        ];
        return Object.fromEntries(
          Array.from({ length: rng.int(5) }, () => [rng.pick(keys), value(depth + 1)]),
        );
      }
    }
  };
  const failures: string[] = [];
  let id = 0;
  const send = async (body: string, what: string) => {
    const response = await fetch(local.url as string, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body,
      signal: AbortSignal.timeout(5000),
    });
    if (response.status !== 200 && response.status !== 413) failures.push(`${what}: HTTP ${response.status}`);
    const text = await response.text();
    if (text.includes('"code":-32603')) failures.push(`${what}: internal error ${text.slice(0, 200)}`);
  };
  // Writes would change the chain under the fuzz; they are fuzzed for their params' validation
  // only with amounts or targets that cannot be valid, which the generators mostly give anyway.
  for (const method of [...LOCAL_CHAIN_METHODS, "noSuchMethod"]) {
    for (let i = 0; i < PER_METHOD; i++) {
      const params = rng.int(8) === 0 ? value() : Array.from({ length: rng.int(4) }, () => value());
      const request = { jsonrpc: "2.0", id: ++id, method, params };
      await send(JSON.stringify(request), `${method} ${JSON.stringify(params).slice(0, 200)}`);
    }
  }
  for (const body of [
    "",
    "{",
    "[]",
    "[1,2]",
    '{"jsonrpc":"1.0","id":1,"method":"getHealth"}',
    "null",
    '"x"',
    "9".repeat(500),
  ]) {
    await send(body, `body ${body.slice(0, 40)}`);
  }
  expect(failures.slice(0, 20)).toEqual([]);
  expect(unexpected.slice(0, 5)).toEqual([]);
  const health = await fetch(local.url as string, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: '{"jsonrpc":"2.0","id":1,"method":"getHealth"}',
  });
  expect(await health.json()).toEqual({ jsonrpc: "2.0", result: "ok", id: 1 });
}, 120_000);

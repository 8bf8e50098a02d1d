/**
 * The in-process transport hands kit the same values the HTTP transport would: for a spread of
 * requests (u64 params beyond 2^53 included), the answer through `createLocalTransport` equals
 * the handler's JSON text as kit's own HTTP transport reads it (`parseJsonWithBigInts`).
 */
import { parseJsonWithBigInts, stringifyJsonWithBigInts } from "@solana/rpc-spec-types";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningLocalChain, startLocalChain } from "../src/local-chain/index.ts";
import { loadCatalog } from "../src/token/catalog.ts";

const USDC = "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v";
let local: RunningLocalChain;
let signature: string;

beforeAll(async () => {
  local = await startLocalChain({
    catalog: loadCatalog(),
    port: undefined,
    statePath: undefined,
    slotMs: 400,
  });
  const answer = (await local.transport({
    payload: { jsonrpc: "2.0", id: "0", method: "getSignaturesForAddress", params: [USDC, { limit: 1 }] },
  })) as unknown as { result: { signature: string }[] };
  signature = answer.result[0]?.signature as string;
});
afterAll(async () => {
  await local?.close();
});

const requests = (): [string, unknown[]][] => [
  ["getSlot", [{ commitment: "confirmed" }]],
  ["getLatestBlockhash", []],
  ["getEpochInfo", [{ commitment: "finalized" }]],
  ["getAccountInfo", [USDC, { encoding: "jsonParsed" }]],
  ["getAccountInfo", [USDC, { encoding: "base64", dataSlice: { offset: 0n, length: 36n } }]],
  ["getSignaturesForAddress", [USDC, { limit: 25n }]],
  ["getTransaction", [signature, { encoding: "json", maxSupportedTransactionVersion: 0 }]],
  ["getTokenSupply", [USDC]],
  ["getMinimumBalanceForRentExemption", [165n]],
  ["getBalance", ["11111111111111111111111111111111"]],
  ["getSignaturesForAddress", [USDC, { limit: 1001n }]],
  ["getBalance", ["not an address"]],
  ["getBalance", [{}]],
  ["noSuchMethod", []],
  ["requestAirdrop", ["11111111111111111111111111111111", 18_446_744_073_709_551_615n]],
];

describe("the local transport", () => {
  it("answers exactly what kit reads from the same handler's JSON text", async () => {
    for (const [method, params] of requests()) {
      const payload = { jsonrpc: "2.0", id: "7", method, params };
      const viaText = parseJsonWithBigInts(await local.handler.handle(stringifyJsonWithBigInts(payload)));
      const direct = await local.transport({ payload });
      // Both answered at the same slot: nothing ran in between (the chain only moves with time).
      expect(direct, method).toEqual(viaText);
    }
  });
});

/**
 * The JSON-RPC contract (solana-rpc.contract.ts) against the embedded local chain over HTTP, and,
 * read-only, against a real cluster when SOLANA_RPC_URL_TEST names one (devnet, mainnet, a
 * provider): what the local chain answers must be what a cluster answers.
 */
import { address } from "@solana/kit";
import { afterAll, beforeAll } from "vitest";
import { type RunningLocalChain, startLocalChain } from "../src/local-chain/index.ts";
import { loadCatalog } from "../src/token/catalog.ts";
import { describeSolanaRpc } from "./solana-rpc.contract.ts";
import { describeAgaveAnswers } from "./solana-rpc-agave.contract.ts";

const catalog = loadCatalog();
let local: RunningLocalChain;

beforeAll(async () => {
  local = await startLocalChain({ catalog, port: 0, statePath: undefined, slotMs: 400 });
});
afterAll(async () => {
  await local?.close();
});

describeSolanaRpc("the embedded local chain", () => ({
  url: local.url as string,
  writable: true,
  mint: address(catalog.tokens.find((t) => t.symbol === "USDC")?.mint as string),
}));

describeAgaveAnswers("the embedded local chain", () => ({ url: local.url as string }));

const cluster = process.env.SOLANA_RPC_URL_TEST;
const reason =
  cluster === undefined || cluster === ""
    ? "SOLANA_RPC_URL_TEST is not set (no cluster to compare against)"
    : undefined;
if (reason !== undefined) console.log(`Solana JSON-RPC contract against a real cluster: skipped: ${reason}`);
describeSolanaRpc(
  "a real cluster (read-only)",
  () => ({
    url: cluster as string,
    writable: false,
    mint: address("So11111111111111111111111111111111111111112"),
  }),
  reason,
);

/**
 * The local chain's public surface: a small surfpool for Node, an embedded Solana test validator
 * on LiteSVM. Everything outside src/local-chain/ (the service, the tests, the benches) imports
 * it from here and from nowhere else inside it (test/architecture.test.ts checks that); the
 * subfolders are its inside (docs/architecture.md, "The local chain's inside").
 *
 * Loading this file loads no server and no genesis: startLocalChain and prepareGenesis import
 * what they run (the chain's ports, PubSub, the genesis) on their first call, so the service's
 * thread, which loads this file to start the chain's worker, never holds a copy of the chain
 * that runs in the worker.
 */
import type { RunningLocalChain, StartLocalChainOptions } from "./start-local-chain.ts";

export type { RunningLocalChain, StartLocalChainOptions } from "./start-local-chain.ts";

/** Starts a local chain in this thread: LiteSVM, its JSON-RPC port and its PubSub port. */
export async function startLocalChain(options: StartLocalChainOptions): Promise<RunningLocalChain> {
  const started = await import("./start-local-chain.ts");
  return await started.startLocalChain(options);
}

/** Builds the genesis into the cache if it is not there yet, so that the next start loads it. */
export async function prepareGenesis(
  options: Pick<StartLocalChainOptions, "catalog" | "slotMs" | "cacheDir" | "log">,
): Promise<void> {
  const started = await import("./start-local-chain.ts");
  await started.prepareGenesis(options);
}

// The chain's options as the configuration gives them (LOCAL_SOLANA_*).
export { chainOptionsOf } from "./chain-options.ts";
// Instructions as jsonParsed shows them.
export { parsedInstruction } from "./encoding/instruction-parser.ts";
// Swaps on the chain's own pools: the Swap API `/build` contract answered in-process.
export { type LocalPool, localPools } from "./pools/local-pools.ts";
export { createEmbeddedSwapRoutes, createLocalSwapApi } from "./pools/local-swap-api.ts";
export {
  createLocalSwapRoutes,
  LOCAL_ROUTE_COMPUTE_UNIT_PRICE,
  LOCAL_ROUTE_LABEL,
  meta,
  noRoute,
  type RoutePool,
  routeAnswer,
  transferCheckedWire,
  type WireInstruction,
  type WireMeta,
  wire,
} from "./pools/local-swap-routes.ts";
// Prices from the pools' reserves: the service's price source on the embedded chain.
export { createEmbeddedPoolPriceSource, createPoolPriceSource } from "./pools/pool-price-source.ts";
export { chainPoolPricing, type PoolPricing, poolPricing } from "./pools/pool-prices.ts";
// JSON-RPC: a handler of any methods, and the methods the chain serves (the service's metrics name them).
export {
  createJsonRpcHandler,
  type JsonRpcHandler,
  type JsonRpcHandlerOptions,
  type RpcMethod,
} from "./rpc/json-rpc-handler.ts";
export { LOCAL_CHAIN_METHODS } from "./rpc/methods/rpc-methods.ts";
// LiteSVM's accounts and transactions read and written straight on its binding; token accounts
// and transactions decoded as kit decodes them.
export { svmAccounts } from "./runtime/svm-accounts.ts";
export { svmTransactions } from "./runtime/svm-transactions.ts";
export { type RawAccount, readTokenAccount, tokenAccountBytes } from "./runtime/token-accounts.ts";
export { decodeTransactionBytes } from "./runtime/transaction-bytes.ts";
export {
  decodeWireTransaction,
  MAX_TRANSACTION_BYTES,
  WireTransactionError,
} from "./runtime/wire-transaction.ts";
// A JSON-RPC handler served on a local port with the chain's guards (Host, CORS, limits).
export {
  type LocalChainServer,
  type LocalChainServerOptions,
  startLocalChainServer,
} from "./server/local-chain-server.ts";
// The mirror of what changed since the genesis, the state file, the genesis cache's directory.
export { type ChainDelta, createChainMirror, withDelta } from "./state/chain-mirror.ts";
export {
  type ChainState,
  defaultCacheDir,
  readChainState,
  type SavedAccount,
  writeChainState,
} from "./state/chain-state.ts";
// Keys: the faucet's and the seeded wallets' (public, derived from names), or any from its seed.
export { type LocalKey, localKey, localKeyFromSeed } from "./state/local-keys.ts";
// The chain in a worker thread of its own (what the service starts), and its answers in kit's shape.
export { createKitShapes } from "./worker/kit-shape.ts";
export {
  type EmbeddedLocalChain,
  type LocalChainWorkerOptions,
  startLocalChainWorker,
} from "./worker/local-chain-worker-host.ts";
export { answerShaped } from "./worker/local-transport.ts";

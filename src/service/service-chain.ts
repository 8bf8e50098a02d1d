import type { RpcTransport } from "@solana/kit";
import type { Registry } from "prom-client";
import { createCachedChain } from "../chain/cached-chain.ts";
import type { Chain, TransferChain } from "../chain/chain.ts";
import { createHttpTransport } from "../chain/http-transport.ts";
import { createKitChain } from "../chain/kit-chain.ts";
import { createLazyTransferChain } from "../chain/lazy-transfer-chain.ts";
import { createResilientTransport } from "../chain/resilient-transport.ts";
import { createSharedTransferChain } from "../chain/shared-transfer-chain.ts";
import { type Config, redactRpcUrl } from "../config.ts";
import type { EmbeddedLocalChain } from "../local-chain/index.ts";
import type { Logger } from "../logger.ts";
import { registerChainMetrics, registerLocalChainMetrics } from "../observability/chain-metrics.ts";

/** Mints and metadata kept in memory, and for how long they are trusted. */
const CACHED_ACCOUNTS = 1000;
const ACCOUNT_TTL_MS = 60_000;

/**
 * The chain adapter on its transport: HTTP to SOLANA_RPC_URL, or the embedded local chain (loaded
 * only then: LiteSVM and its state weigh some 100 MB), wrapped with bounded concurrency, retries
 * and metrics, and cached where the chain does not change.
 */
export async function createChain(
  config: Config,
  logger: Logger,
  registry: Registry,
): Promise<{ chain: Chain; transfers: TransferChain; localChain: EmbeddedLocalChain | undefined }> {
  const solana = config.solana;
  let transport: RpcTransport;
  let localChain: EmbeddedLocalChain | undefined;
  if (solana.rpcUrl !== undefined) {
    transport = createHttpTransport({
      url: solana.rpcUrl,
      timeoutMs: solana.timeoutMs,
      maxResponseBytes: solana.maxResponseBytes,
    });
    logger.info(
      { solana_rpc: redactRpcUrl(solana.rpcUrl), commitment: solana.commitment },
      "token data comes from the Solana cluster at SOLANA_RPC_URL",
    );
  } else {
    localChain = await startEmbeddedChain(config, logger, registry);
    transport = localChain.transport;
  }
  // One transport for reads and writes: one bound on what the service asks of the cluster.
  const resilient = createResilientTransport({
    transport,
    maxConcurrency: solana.maxConcurrency,
    maxQueued: solana.maxQueued,
    maxRetries: solana.maxRetries,
    retryBaseMs: solana.retryBaseMs,
    maxRetryWaitMs: solana.maxRetryWaitMs,
    onRequest: registerChainMetrics(registry),
  });
  const kit = createKitChain({ transport: resilient, commitment: solana.commitment });
  // One blockhash, one block height and one status call serve every run in flight at a time.
  const transfers = createSharedTransferChain(
    createLazyTransferChain(async () =>
      (await import("../chain/kit-transfer-chain.ts")).createKitTransferChain({
        transport: resilient,
        commitment: solana.commitment,
      }),
    ),
  );
  const chain = createCachedChain({
    chain: kit,
    maxTransactions: solana.transactionCache,
    maxAccounts: CACHED_ACCOUNTS,
    accountTtlMs: ACCOUNT_TTL_MS,
  });
  return { chain, transfers, localChain };
}

async function startEmbeddedChain(
  config: Config,
  logger: Logger,
  registry: Registry,
): Promise<EmbeddedLocalChain> {
  // Loaded only here: the chain's code stays out of a service that reads SOLANA_RPC_URL.
  const { chainOptionsOf, LOCAL_CHAIN_METHODS, startLocalChainWorker } = await import(
    "../local-chain/index.ts"
  );
  const local = config.solana.local;
  const metrics = registerLocalChainMetrics(registry, LOCAL_CHAIN_METHODS);
  let running: EmbeddedLocalChain;
  try {
    // The chain runs in a worker thread of its own: nothing its clients ask holds this event loop.
    running = await startLocalChainWorker({
      ...chainOptionsOf(local),
      timeoutMs: config.solana.timeoutMs,
      log: (level, message, fields) => logger[level](fields ?? {}, message),
      onRequest: metrics.onRequest,
      onRejected: metrics.onRejected,
      onSaved: metrics.onSaved,
      onAccountBytes: metrics.onAccountBytes,
    });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EADDRINUSE") {
      throw new LocalChainPortInUseError(local.port);
    }
    throw error;
  }
  logger.info(
    {
      solana_rpc: running.url,
      solana_pubsub: running.pubsub?.url,
      state: local.statePath ?? null,
      cheatcodes: local.cheatcodes,
    },
    `the embedded local chain serves Solana JSON-RPC at ${running.url}`,
  );
  return running;
}

/** The local chain's port is taken (another local chain, a test validator): a clear message. */
export class LocalChainPortInUseError extends Error {
  override readonly name = "LocalChainPortInUseError";
  constructor(port: number) {
    super(
      `LOCAL_SOLANA_RPC_PORT ${port} is in use on 127.0.0.1 (or the PubSub port after it, ${port + 1}): set SOLANA_RPC_URL=http://127.0.0.1:${port} to use the chain already serving there, or LOCAL_SOLANA_RPC_PORT to another port`,
    );
  }
}

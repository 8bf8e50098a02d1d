import { createLogger } from "../logger.ts";
import { keepServingOnUnhandledRejection, loadConfigOrExit, stopOnSignals } from "../process-lifecycle.ts";
import { loadCatalog } from "../token/catalog.ts";
import { chainOptionsOf } from "./chain-options.ts";
import { startLocalChain } from "./start-local-chain.ts";
import { LOCAL_KEYS } from "./state/genesis.ts";

/**
 * `npm run local-chain`: the embedded local chain alone, serving Solana JSON-RPC on
 * 127.0.0.1:LOCAL_SOLANA_RPC_PORT (8899), so that several service replicas share one chain through
 * SOLANA_RPC_URL=http://127.0.0.1:8899, and wallets and scripts use it with standard clients.
 * LOCAL_SOLANA_STATE keeps it across restarts. SIGTERM or SIGINT saves the state and exits 0.
 */
async function main(): Promise<void> {
  const config = loadConfigOrExit();
  const logger = createLogger({ level: config.logLevel, bufferBytes: config.logBufferBytes });
  keepServingOnUnhandledRejection(logger);
  const local = config.solana.local;
  let chain: Awaited<ReturnType<typeof startLocalChain>>;
  try {
    chain = await startLocalChain({
      catalog: loadCatalog(),
      ...chainOptionsOf(local),
      log: (level, message, fields) => logger[level](fields ?? {}, message),
      onUnexpected: (error, method) => logger.error({ err: error, method }, "a JSON-RPC method failed"),
    });
  } catch (error) {
    const inUse = (error as NodeJS.ErrnoException).code === "EADDRINUSE";
    logger.fatal(
      inUse ? {} : { err: error },
      inUse
        ? `LOCAL_SOLANA_RPC_PORT ${local.port} is in use on 127.0.0.1 (or the PubSub port after it, ${local.port + 1})`
        : "the local chain could not start",
    );
    logger.flush();
    process.exit(1);
  }
  logger.info(
    {
      solana_rpc: chain.url,
      solana_pubsub: chain.pubsub?.url,
      state: local.statePath ?? null,
      cheatcodes: local.cheatcodes,
      faucet: LOCAL_KEYS.faucet.address,
      wallets: LOCAL_KEYS.wallets.map((w) => w.address),
      ready_ms: Math.round(performance.now()),
    },
    `local chain serving Solana JSON-RPC at ${chain.url}`,
  );
  stopOnSignals(logger, () => chain.close(), {
    stopping: "local chain stopping",
    stopped: "local chain stopped",
  });
}

await main();

import { setTimeout as sleep } from "node:timers/promises";
import { Counter, type Registry } from "prom-client";
import { ConfigError } from "./config.ts";
import { createIdleHeapRelease, type IdleHeapRelease } from "./idle-heap-release.ts";
import type { TransferHooks } from "./kinds/transfer/transfer-executor.ts";
import { createLogger, type Logger } from "./logger.ts";
import {
  keepServingOnUnhandledRejection,
  loadConfigOrExit,
  stopOnSignals,
  stopWithLauncher,
} from "./process-lifecycle.ts";
import { createService, LocalChainPortInUseError } from "./service.ts";

/**
 * Entry point: configuration from the environment, then the service (chain, context, scheduler,
 * server; see service.ts). SIGTERM or SIGINT stops accepting, lets calls and runs in flight finish
 * (bounded by SHUTDOWN_TIMEOUT_MS), saves the local chain's state and exits 0.
 */
async function main(): Promise<void> {
  const config = loadConfigOrExit();
  const logger = createLogger({ level: config.logLevel, bufferBytes: config.logBufferBytes });
  // Counted from the first line on; /metrics shows the count once the service's registry exists.
  const rejections = new Counter({
    name: "process_unhandled_rejections_total",
    help: "Promises rejected with nothing to handle them (each one a bug, logged); the process kept serving.",
    registers: [],
  });
  keepServingOnUnhandledRejection(logger, () => rejections.inc());
  const transferHooks = killHook(process.env.TEST_KILL_AT_SEND);
  const service = await createService(
    config,
    logger,
    transferHooks === undefined ? {} : { transferHooks },
  ).catch((error: unknown) => {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`);
      process.exit(2);
    }
    if (error instanceof LocalChainPortInUseError) {
      logger.fatal(error.message);
      logger.flush();
      process.exit(1);
    }
    throw error;
  });
  service.registry.registerMetric(rejections);
  let address: Awaited<ReturnType<typeof service.listen>>;
  try {
    address = await service.listen();
  } catch (error) {
    // EADDRINUSE and friends: one clear line saying what to do, not a stack trace.
    const code = (error as NodeJS.ErrnoException).code;
    const where = `${config.host}:${config.port}`;
    if (code === "EADDRINUSE") {
      logger.fatal(
        { code, host: config.host, port: config.port },
        `PORT ${config.port} is in use on ${config.host}: stop what serves there (another npm start?) or set PORT to another port`,
      );
    } else if (code === "EACCES") {
      logger.fatal(
        { code, host: config.host, port: config.port },
        `cannot listen on ${where}: ports below 1024 need privileges; set PORT to 1024 or above`,
      );
    } else {
      logger.fatal({ err: error, host: config.host, port: config.port }, `cannot listen on ${where}`);
    }
    await service.close();
    process.exit(1);
  }
  logger.info(
    {
      host: address.address,
      port: address.port,
      store: service.context.storeKind,
      chain: config.solana.rpcUrl === undefined ? "local" : "cluster",
      // Milliseconds since the process started: what a rollout waits for.
      ready_ms: Math.round(performance.now()),
    },
    `serving gRPC, gRPC-Web and Connect on port ${address.port}`,
  );

  const release = idleHeapRelease(service.registry, logger);
  stopOnSignals(
    logger,
    () => {
      release?.stop();
      return service.close();
    },
    {
      stopping: "shutting down: finishing calls in flight",
      stopped: "stopped",
    },
  );
  // `npm start &` then `kill <npm's pid>`: the service goes with npm, freeing its ports.
  stopWithLauncher(logger);
}

/**
 * Gives memory back whenever the process goes quiet after work (see idle-heap-release.ts), with
 * the collector `--expose-gc` makes global: `npm start` and the image pass it.
 */
function idleHeapRelease(registry: Registry, logger: Logger): IdleHeapRelease | undefined {
  const gc = globalThis.gc;
  if (gc === undefined) {
    logger.debug("idle memory is not given back: node runs without --expose-gc");
    return undefined;
  }
  const release = createIdleHeapRelease({
    collect: () => gc({ type: "major", execution: "sync", flavor: "last-resort" }),
    registry,
    onRelease: ({ ms, rssBefore, rssAfter }) =>
      logger.debug(
        {
          ms: Math.round(ms),
          rss_before_mb: Math.round(rssBefore / 1048576),
          rss_after_mb: Math.round(rssAfter / 1048576),
        },
        "idle: memory given back",
      ),
  });
  release.start();
  return release;
}

/**
 * Test hook of the exactly-once test across replicas, not configuration: TEST_KILL_AT_SEND=N:before
 * SIGKILLs this process at its Nth new transfer or swap after the transaction was kept and before
 * it went out, once that transaction's blockhash has expired (the process keeps its lease and
 * works on meanwhile, as a replica stalled at the send would), so the replica that takes the slot
 * over must sign anew; N:after SIGKILLs it right after the Nth went out, before its outcome was
 * known.
 */
function killHook(text: string | undefined): TransferHooks | undefined {
  const match = /^(\d+):(before|after)$/.exec(text ?? "");
  if (match === null) return undefined;
  let left = Number(match[1]);
  const kill = () => process.kill(process.pid, "SIGKILL");
  if (match[2] === "after") {
    return {
      afterSend: () => {
        if (--left === 0) kill();
      },
    };
  }
  return {
    async beforeSend(kept, blockHeight) {
      if (--left !== 0) return;
      while ((await blockHeight()) <= kept.lastValidBlockHeight) await sleep(200);
      kill();
    },
  };
}

await main();

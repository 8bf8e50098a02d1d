import { createAppContext } from "./app-context.ts";
import { ConfigError, loadConfig } from "./config.ts";
import { createLogger } from "./logger.ts";
import { build } from "./server.ts";

/**
 * Entry point: configuration from the environment, then the context, then the server. SIGTERM or
 * SIGINT stops accepting, lets calls in flight finish (bounded by SHUTDOWN_TIMEOUT_MS) and exits 0.
 */
async function main(): Promise<void> {
  let config: ReturnType<typeof loadConfig>;
  try {
    config = loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`);
      process.exit(2);
    }
    throw error;
  }
  const logger = createLogger({ level: config.logLevel, bufferBytes: config.logBufferBytes });
  const context = await createAppContext(config, logger).catch((error: unknown) => {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`);
      process.exit(2);
    }
    throw error;
  });
  const server = build(context);
  let address: Awaited<ReturnType<typeof server.listen>>;
  try {
    address = await server.listen();
  } catch (error) {
    // EADDRINUSE and friends: one clear line, not a stack trace.
    logger.fatal(
      { err: error, host: config.host, port: config.port },
      `cannot listen on ${config.host}:${config.port}`,
    );
    await context.destroy();
    process.exit(1);
  }
  logger.info(
    { host: address.address, port: address.port, store: context.storeKind },
    `serving gRPC, gRPC-Web and Connect on port ${address.port}`,
  );

  let stopping = false;
  const stop = async (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, "shutting down: finishing calls in flight");
    await server.close();
    await context.destroy();
    logger.info("stopped");
    logger.flush();
    process.exit(0);
  };
  process.on("SIGTERM", (s) => void stop(s));
  process.on("SIGINT", (s) => void stop(s));
}

await main();

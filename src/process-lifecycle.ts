import { type Config, ConfigError, loadConfig } from "./config.ts";
import type { Logger } from "./logger.ts";

/**
 * The configuration from the environment, or exit 2 with one line on stderr naming every bad
 * variable (never a stack trace): what both entry points (`main.ts`, `local-chain/main.ts`) do first.
 */
export function loadConfigOrExit(): Config {
  try {
    return loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`);
      process.exit(2);
    }
    throw error;
  }
}

/**
 * On SIGTERM or SIGINT, once: logs `stopping`, runs `stop` (which drains and releases), logs
 * `stopped`, flushes the log and exits 0.
 */
export function stopOnSignals(
  logger: Logger,
  stop: () => Promise<void>,
  words: { stopping: string; stopped: string },
): void {
  let stopping = false;
  const handle = async (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, words.stopping);
    await stop();
    logger.info(words.stopped);
    logger.flush();
    process.exit(0);
  };
  process.on("SIGTERM", (s) => void handle(s));
  process.on("SIGINT", (s) => void handle(s));
}

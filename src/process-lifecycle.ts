import { readFileSync } from "node:fs";
import { type Config, ConfigError, loadConfig } from "./config.ts";
import type { Logger } from "./logger.ts";
import { createRateLimitedLog } from "./observability/rate-limited-log.ts";

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

/**
 * The process's answer to a promise rejected with nothing to handle it: logged at error level
 * (at most 5 lines a second, the rest counted on the next line), told to `onRejection` (a
 * metric), and the process keeps serving. Node's default is to exit with code 1, which turns one
 * forgotten `catch` on one request's path into an outage of every API the process serves; such a
 * rejection is a bug to fix from the log, not a reason to die. Uncaught exceptions keep Node's
 * default (exit): a throw part-way through synchronous code may leave state half-changed.
 */
export function keepServingOnUnhandledRejection(logger: Logger, onRejection: () => void = () => {}): void {
  const log = createRateLimitedLog({ logger, level: "error", perSecond: 5 });
  process.on("unhandledRejection", (reason) => {
    onRejection();
    log({ err: reason }, "unhandled promise rejection (a bug): the process keeps serving");
  });
}

/**
 * Stops the process (as SIGTERM does) when whoever launched it through npm is gone: `npm start &`
 * then `kill <npm's pid>` kills npm, and its child would otherwise keep serving, holding the HTTP
 * and chain ports. npm runs the service through a shell, so the launcher is the parent and, when
 * the parent is that shell, its own parent: a change of either (the orphan is adopted) means npm
 * went away. Only under npm (npm_lifecycle_event set); a container's or a supervisor's process is
 * left to its supervisor. Reads /proc where there is one (Linux); elsewhere watches the parent only.
 */
export function stopWithLauncher(
  logger: Logger,
  options: { readonly intervalMs?: number; readonly env?: NodeJS.ProcessEnv } = {},
): { stop(): void } {
  const env = options.env ?? process.env;
  if (env.npm_lifecycle_event === undefined) return { stop() {} };
  const parent = process.ppid;
  const grandparent = parentOf(parent);
  const timer = setInterval(() => {
    if (process.ppid === parent && parentOf(parent) === grandparent) return;
    clearInterval(timer);
    logger.warn({ parent }, "npm, which started this process, is gone: stopping as on SIGTERM");
    process.kill(process.pid, "SIGTERM");
  }, options.intervalMs ?? 1000);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}

/** The parent pid of `pid` from /proc (Linux), or undefined where that cannot be read. */
function parentOf(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so read after the last ")".
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return Number(fields[1]);
  } catch {
    return undefined;
  }
}

/**
 * The service as operators run it: `src/main.ts` in a child Node process (the Node running the
 * tests, which runs .ts natively), configured only through its environment.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";

const PROJECT_ROOT = fileURLToPath(new URL("../../", import.meta.url));
const MAIN = fileURLToPath(new URL("../../src/main.ts", import.meta.url));

export interface MainProcess {
  readonly child: ChildProcess;
  /** Everything written so far. */
  stdout(): string;
  stderr(): string;
  /** The stdout lines that are JSON objects (the log), parsed. */
  logLines(): Record<string, unknown>[];
  /** Resolves with the exit code (or the signal) once the process has exited. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Resolves with the first log line `match` accepts; rejects on exit or after `timeoutMs`. */
  waitForLog(
    match: (line: Record<string, unknown>) => boolean,
    timeoutMs?: number,
  ): Promise<Record<string, unknown>>;
  /** SIGKILL, if still running. */
  kill(): void;
}

/**
 * Node's compile cache for the processes the tests start (as test/conformance.test.ts has for its
 * servers): every start after the first reads the compiled modules instead of compiling them
 * again, about half of a start's CPU (a refused configuration: 1.1 s of CPU, 0.55 s with it).
 * Node writes each entry to a temporary file and renames it, and checks it against the source
 * when it reads it, so processes that start side by side may share it.
 */
export const NODE_COMPILE_CACHE = fileURLToPath(new URL("../../.tools/node-compile-cache", import.meta.url));

/** The local chain alone, as `npm run local-chain` runs it. */
export const LOCAL_CHAIN_MAIN = fileURLToPath(new URL("../../src/local-chain/main.ts", import.meta.url));

/**
 * Spawns main.ts (or `script`) with exactly `env` on top of a minimal environment (PATH and HOME
 * only), so no MONGODB_URI or other setting of the test run leaks in; `nodeFlags` go to node.
 */
export function spawnMain(env: Record<string, string>, script = MAIN, nodeFlags: string[] = []): MainProcess {
  const child = spawn(process.execPath, [...nodeFlags, script], {
    cwd: PROJECT_ROOT,
    // Keys are off unless a test turns them on: AUTH_MODE defaults to apikey with MONGODB_URI.
    // The embedded local chain takes any free port, so that processes started side by side (and
    // anything else on 8899) do not collide.
    env: {
      PATH: process.env.PATH ?? "",
      HOME: process.env.HOME ?? "",
      NODE_COMPILE_CACHE,
      AUTH_MODE: "none",
      // Tests about other things make hundreds of agents as one owner; the caps' own tests set them.
      MAX_AGENTS_PER_OWNER: "10000000",
      MAX_PENDING_PER_OWNER: "10000000",
      LOCAL_SOLANA_RPC_PORT: "0",
      ...env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  const waiters = new Set<() => void>();
  child.stdout?.setEncoding("utf8").on("data", (chunk: string) => {
    out += chunk;
    for (const wake of waiters) wake();
  });
  child.stderr?.setEncoding("utf8").on("data", (chunk: string) => {
    err += chunk;
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once("exit", (code, signal) => {
      resolve({ code, signal });
      for (const wake of waiters) wake();
    });
  });
  // Streams may still hold data when "exit" fires; "close" is after they ended.
  const closed = new Promise<void>((resolve) => child.once("close", () => resolve()));

  const logLines = () =>
    out
      .split("\n")
      .filter((line) => line.startsWith("{"))
      .flatMap((line) => {
        try {
          return [JSON.parse(line) as Record<string, unknown>];
        } catch {
          return [];
        }
      });

  return {
    child,
    stdout: () => out,
    stderr: () => err,
    logLines,
    exited: exited.then(async (result) => {
      await closed;
      return result;
    }),
    waitForLog(match, timeoutMs = 15_000) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`no matching log line within ${timeoutMs} ms; stdout:\n${out}\nstderr:\n${err}`));
        }, timeoutMs);
        const check = () => {
          const line = logLines().find(match);
          if (line !== undefined) {
            clearTimeout(timer);
            waiters.delete(check);
            resolve(line);
          } else if (child.exitCode !== null || child.signalCode !== null) {
            clearTimeout(timer);
            waiters.delete(check);
            reject(new Error(`the process exited before logging it; stdout:\n${out}\nstderr:\n${err}`));
          }
        };
        waiters.add(check);
        check();
      });
    },
    kill() {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    },
  };
}

/** Starts main.ts and resolves once it serves, with the port from its "serving" log line. */
export async function startMain(
  env: Record<string, string> = {},
  nodeFlags: string[] = [],
): Promise<MainProcess & { port: number }> {
  const main = spawnMain({ PORT: "0", HOST: "127.0.0.1", LOG_LEVEL: "info", ...env }, MAIN, nodeFlags);
  try {
    const line = await main.waitForLog(
      (l) => typeof l.port === "number" && typeof l.msg === "string" && l.msg.startsWith("serving"),
    );
    return Object.assign(main, { port: line.port as number });
  } catch (error) {
    main.kill();
    throw error;
  }
}

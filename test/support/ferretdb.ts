/**
 * FerretDB (v1, SQLite backend) as a throwaway MongoDB-compatible server for tests.
 *
 * `ensureFerretdbBinary` builds the small wrapper in `tools/ferretdb` into `.tools/bin/ferretdb`
 * (the published FerretDB command cannot be `go install`ed, see tools/ferretdb/main.go).
 * `startFerretdb` runs a private instance on a free loopback port with its own data directory; test
 * files that stop and restart a database use it directly, the global setup uses it for the shared one.
 */
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { rmSync } from "node:fs";
import { chmod, cp, mkdtemp, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { fileURLToPath } from "node:url";
import { buildGoTool, TOOLS_BIN } from "./go-tool.ts";
import { accepts, freePort } from "./ports.ts";
import { procStatFields } from "./proc-stat.ts";

export interface FerretdbServer {
  /** `mongodb://127.0.0.1:<port>/` */
  readonly uri: string;
  readonly port: number;
  /** The running process's id (CPU figures in the benches read /proc/<pid>/stat). */
  readonly pid: number | undefined;
  /** SIGTERM, wait for exit, remove the data directory. The instance cannot be restarted after. */
  stop(): Promise<void>;
  /** Start the process again on the same port and data directory (stopping it first if running). */
  restart(): Promise<void>;
  /** SIGKILL the process (a crash) and wait for its exit; the data directory stays for restart(). */
  kill(): Promise<void>;
  /**
   * SIGSTOP the process: connections stay open but nothing answers (a hung server). Resolves once
   * every thread of it is stopped: kill() returns before they are, and a loaded machine once
   * answered a request sent after it.
   */
  pause(): Promise<void>;
  /** SIGCONT a paused process. */
  resume(): void;
  /**
   * Calls `listener` once if the process ends without stop(), kill() or restart() having asked
   * for it (a crash, a signal from elsewhere, a Go panic), with how it ended and its last output.
   */
  onUnexpectedExit(listener: (exit: FerretdbExit) => void): void;
}

/** How a FerretDB process ended, for a message that names the cause. */
export interface FerretdbExit {
  readonly pid: number | undefined;
  readonly port: number;
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  /** When it ended. */
  readonly at: Date;
  /**
   * What it wrote to stdout and stderr: the start of a Go crash report (its `panic:` or `fatal
   * error:` line and the failing goroutine's stack) when there was one, then the last
   * STDERR_TAIL_CHARS characters.
   */
  readonly output: string;
}

const PROJECT_ROOT = fileURLToPath(new URL("../../", import.meta.url));
const SOURCE_DIR = join(PROJECT_ROOT, "tools", "ferretdb");
const BINARY = join(TOOLS_BIN, "ferretdb");
const READY_TIMEOUT_MS = 20_000;
const EXIT_TIMEOUT_MS = 10_000;
const STDERR_TAIL_CHARS = 8_000;
const CRASH_HEAD_CHARS = 6_000;

const OVERLAY_DIR = join(SOURCE_DIR, "overlay");
/** The FerretDB module the wrapper is built against (tools/ferretdb/go.mod). */
const FERRETDB_MODULE = "github.com/FerretDB/FerretDB@v1.24.2";
/** Each file of tools/ferretdb/overlay/ and the module's file it replaces (see its README). */
const OVERLAID_FILES: Readonly<Record<string, string>> = {
  "metadata.go": "internal/backends/sqlite/metadata/metadata.go",
  "pool.go": "internal/backends/sqlite/metadata/pool/pool.go",
};

const building = new Map<boolean, Promise<string>>();

/**
 * The path of the FerretDB wrapper binary, built with `go build` when missing or out of date:
 * with the changes of tools/ferretdb/overlay/ (lookups by _id use the _id index; a dropped database takes its WAL files with it), or
 * as FerretDB ships with `asShipped`.
 */
export function ensureFerretdbBinary(options: { asShipped?: boolean } = {}): Promise<string> {
  const asShipped = options.asShipped === true;
  let pending = building.get(asShipped);
  if (pending === undefined) {
    pending = buildIfStale(asShipped).catch((err: unknown) => {
      building.delete(asShipped);
      throw err;
    });
    building.set(asShipped, pending);
  }
  return pending;
}

async function buildIfStale(asShipped: boolean): Promise<string> {
  const binary = asShipped ? `${BINARY}-as-shipped` : BINARY;
  const binaryMtime = await mtimeMs(binary);
  if (binaryMtime !== undefined) {
    const sources = [
      ...(await readdir(SOURCE_DIR))
        .filter((f) => f.endsWith(".go") || f === "go.mod" || f === "go.sum")
        .map((f) => join(SOURCE_DIR, f)),
      ...(asShipped ? [] : (await readdir(OVERLAY_DIR)).map((f) => join(OVERLAY_DIR, f))),
    ];
    const newest = Math.max(0, ...(await Promise.all(sources.map(mtimeMs))).map((m) => m ?? 0));
    if (newest <= binaryMtime) return binary;
  }
  const env = { GOFLAGS: "-mod=mod" };
  const modfile = asShipped ? [] : [`-modfile=${await writePatchedModule(env)}`];
  return buildGoTool({
    binary,
    what: `the FerretDB test server (tools/ferretdb${asShipped ? ", as shipped" : ""})`,
    command: (dir) => ({ args: ["build", ...modfile, "-o", join(dir, basename(binary)), "."], env }),
    cwd: SOURCE_DIR,
  });
}

/**
 * Go refuses overlays of files in its module cache, so the FerretDB module is copied out of it into
 * `.tools/ferretdb-module` with the changed files, and the build takes it through a `replace`
 * in a go.mod of its own (`-modfile`), leaving tools/ferretdb/go.mod as committed.
 */
async function writePatchedModule(env: Record<string, string>): Promise<string> {
  const go = (args: string[]) =>
    new Promise<string>((resolve, reject) => {
      execFile("go", args, { cwd: SOURCE_DIR, env: { ...process.env, ...env } }, (err, stdout, stderr) =>
        err === null
          ? resolve(stdout.trim())
          : reject(new Error(`go ${args.join(" ")}: ${stderr}`, { cause: err })),
      );
    });
  const moduleDir = JSON.parse(await go(["mod", "download", "-json", FERRETDB_MODULE])).Dir as string;
  const work = join(TOOLS_BIN, "..", "ferretdb-module");
  await rm(work, { recursive: true, force: true });
  await cp(moduleDir, work, { recursive: true });
  for (const [file, path] of Object.entries(OVERLAID_FILES)) {
    const patched = join(work, path);
    await chmod(patched, 0o644);
    await cp(join(OVERLAY_DIR, file), patched);
  }
  const modfile = join(TOOLS_BIN, "..", "ferretdb-build.mod");
  const goMod = await readFile(join(SOURCE_DIR, "go.mod"), "utf8");
  await writeFile(modfile, `${goMod}\nreplace github.com/FerretDB/FerretDB => ${work}\n`);
  await cp(join(SOURCE_DIR, "go.sum"), modfile.replace(/\.mod$/, ".sum"));
  return modfile;
}

async function mtimeMs(path: string): Promise<number | undefined> {
  try {
    return (await stat(path)).mtimeMs;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw err;
  }
}

/** Starts a private FerretDB on a free loopback port with a fresh data directory. */
export async function startFerretdb(options: { asShipped?: boolean } = {}): Promise<FerretdbServer> {
  // asShipped: FerretDB without the overlay's _id lookups (tools/ferretdb/overlay/), so a bench
  // can show what it changes.
  const flags: string[] = [];
  const binary = await ensureFerretdbBinary(options);
  const dataDir = await mkdtemp(join(tmpdir(), "ferretdb-test-"));
  trackDir(dataDir);
  let port = 0;
  let running: Running | undefined;
  try {
    // Another process may grab the free port between probing and binding it: try a few ports.
    for (let attempt = 1; running === undefined; attempt++) {
      port = await freePort();
      try {
        running = await launch(binary, port, dataDir, flags);
      } catch (err) {
        if (attempt >= 3 || !(err instanceof PortInUseError)) throw err;
      }
    }
  } catch (err) {
    untrackDir(dataDir);
    await rm(dataDir, { recursive: true, force: true });
    throw err;
  }

  let stopped = false;
  let current: Running | undefined = running;
  const exitListeners: ((exit: FerretdbExit) => void)[] = [];
  // Each Running reports its own end; only the one still current, and not ended on purpose, is a surprise.
  const watch = (proc: Running) => {
    void proc.ended.then((exit) => {
      if (current !== proc) return;
      current = undefined;
      for (const listener of exitListeners) listener({ ...exit, port });
    });
  };
  watch(running);
  const uri = `mongodb://127.0.0.1:${port}/`;
  return {
    uri,
    port,
    get pid() {
      return current?.pid;
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      current?.signal("SIGCONT"); // a paused process cannot act on SIGTERM
      const proc = current;
      current = undefined;
      if (proc) await proc.terminate("SIGTERM");
      untrackDir(dataDir);
      await rm(dataDir, { recursive: true, force: true });
    },
    async pause() {
      const pid = current?.pid;
      current?.signal("SIGSTOP");
      if (pid !== undefined) await allThreadsStopped(pid);
    },
    resume() {
      current?.signal("SIGCONT");
    },
    onUnexpectedExit(listener) {
      exitListeners.push(listener);
    },
    async kill() {
      const proc = current;
      current = undefined;
      if (proc) await proc.terminate("SIGKILL");
    },
    async restart() {
      if (stopped) throw new Error("this FerretDB instance was stopped; start a new one");
      const proc = current;
      current = undefined;
      if (proc) await proc.terminate("SIGTERM");
      // The port was ours a moment ago; retry briefly in case the kernel has not released it yet.
      for (let attempt = 1; ; attempt++) {
        try {
          current = await launch(binary, port, dataDir, flags);
          watch(current);
          return;
        } catch (err) {
          if (attempt >= 10 || !(err instanceof PortInUseError)) throw err;
          await sleep(200);
        }
      }
    },
  };
}

class PortInUseError extends Error {
  override readonly name = "PortInUseError";
}

interface Running {
  readonly pid: number | undefined;
  /** Resolves when the process has ended, however it ended. */
  readonly ended: Promise<Omit<FerretdbExit, "port">>;
  terminate(signal: "SIGTERM" | "SIGKILL"): Promise<void>;
  signal(signal: "SIGSTOP" | "SIGCONT"): void;
}

/** Spawns the server and resolves once its port accepts TCP connections. */
async function launch(
  binary: string,
  port: number,
  dataDir: string,
  flags: readonly string[],
): Promise<Running> {
  const child = spawn(
    binary,
    [`--listen-addr=127.0.0.1:${port}`, `--sqlite-url=file:${dataDir}/`, ...flags],
    {
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  track(child);
  let output = "";
  // A Go crash report starts with the reason (a panic, a fatal error, or the signal that ended it:
  // "SIGBUS: bus error") and the failing goroutine, then dumps every other goroutine: the tail
  // alone would lose the reason, so its start is kept apart, from where it begins in the stream.
  let crash = "";
  let written = 0;
  let crashAt = -1;
  const keep = (chunk: Buffer) => {
    const piece = chunk.toString("utf8");
    const text = output + piece;
    const textStart = written - output.length;
    written += piece.length;
    if (crashAt < 0) {
      const at = text.search(/^(panic: |fatal error: |runtime: |unexpected fault address|SIG[A-Z]+: )/m);
      if (at >= 0) {
        crashAt = textStart + at;
        crash = text.slice(at, at + CRASH_HEAD_CHARS);
      }
    } else if (crash.length < CRASH_HEAD_CHARS) {
      crash = (crash + piece).slice(0, CRASH_HEAD_CHARS);
    }
    output = text.slice(-STDERR_TAIL_CHARS);
  };
  /** The crash report's start (as far as the tail does not hold it), then the tail. */
  const said = () => {
    const tailStart = written - output.length;
    if (crashAt < 0 || crashAt >= tailStart) return output;
    const head = crash.slice(0, tailStart - crashAt);
    const gap = tailStart - crashAt - head.length;
    return gap > 0 ? `${head}\n[... ${gap} characters left out ...]\n${output}` : head + output;
  };
  child.stdout?.on("data", keep);
  child.stderr?.on("data", keep);
  const exited = new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once("exit", () => resolve());
  });
  // "close" comes after the pipes have given their last bytes, so the output is complete.
  const ended = new Promise<Omit<FerretdbExit, "port">>((resolve) => {
    child.once("close", (code, signal) =>
      resolve({ pid: child.pid, code, signal, at: new Date(), output: said() }),
    );
  });
  let spawnError: Error | undefined;
  child.once("error", (err) => {
    spawnError = err;
  });

  const terminate = async (signal: "SIGTERM" | "SIGKILL") => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill(signal);
      const timer = setTimeout(() => child.kill("SIGKILL"), EXIT_TIMEOUT_MS);
      await exited;
      clearTimeout(timer);
    }
    untrack(child);
  };

  const deadline = Date.now() + READY_TIMEOUT_MS;
  for (;;) {
    if (spawnError !== undefined || child.exitCode !== null || child.signalCode !== null) {
      await terminate("SIGKILL");
      const how = spawnError?.message ?? `exit code ${child.exitCode ?? child.signalCode}`;
      const message = `FerretDB (${binary}) on port ${port} exited during startup (${how}); its output:\n${said()}`;
      throw /address already in use/.test(output) ? new PortInUseError(message) : new Error(message);
    }
    if (await accepts(port)) return { pid: child.pid, ended, terminate, signal: (sig) => child.kill(sig) };
    if (Date.now() > deadline) {
      await terminate("SIGKILL");
      throw new Error(
        `FerretDB (${binary}) did not accept connections on 127.0.0.1:${port} within ${READY_TIMEOUT_MS} ms; its output:\n${said()}`,
      );
    }
    await sleep(50);
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

// Children must not outlive this process. "exit" covers normal ends and process.exit(); vitest's
// fork workers are ended with SIGTERM, which skips "exit", so the signals are handled too: kill
// the children, then, unless someone else handles the signal, re-raise it for the default action.
// The data directories of instances not stopped go with them. The hooks are only installed while
// there is something to clean up.
const children = new Set<ChildProcess>();
const dataDirs = new Set<string>();
const SIGNALS = ["SIGTERM", "SIGINT", "SIGHUP"] as const;
let hooked = false;

function cleanUpNow(): void {
  for (const child of children) child.kill("SIGKILL");
  children.clear();
  for (const dir of dataDirs) rmSync(dir, { recursive: true, force: true });
  dataDirs.clear();
  syncHooks();
}

function onSignal(signal: NodeJS.Signals): void {
  cleanUpNow();
  if (process.listenerCount(signal) === 0) process.kill(process.pid, signal);
}

function syncHooks(): void {
  const wanted = children.size > 0 || dataDirs.size > 0;
  if (wanted === hooked) return;
  hooked = wanted;
  if (wanted) {
    process.on("exit", cleanUpNow);
    for (const signal of SIGNALS) process.on(signal, onSignal);
  } else {
    process.off("exit", cleanUpNow);
    for (const signal of SIGNALS) process.off(signal, onSignal);
  }
}

function track(child: ChildProcess): void {
  children.add(child);
  child.once("exit", () => untrack(child));
  syncHooks();
}

function untrack(child: ChildProcess): void {
  children.delete(child);
  syncHooks();
}

function trackDir(dir: string): void {
  dataDirs.add(dir);
  syncHooks();
}

function untrackDir(dir: string): void {
  dataDirs.delete(dir);
  syncHooks();
}

/**
 * Waits until every thread of `pid` is in the stopped state ("T", or "t" under a tracer), as
 * /proc/<pid>/task/<tid>/stat says, or for at most 5 s (then the test goes on and says what it
 * sees). Linux only, as the rest of the test setup.
 */
async function allThreadsStopped(pid: number): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (Date.now() < deadline) {
    try {
      const tasks = await readdir(`/proc/${pid}/task`);
      const states = await Promise.all(
        tasks.map(async (tid) => {
          return procStatFields(await readFile(`/proc/${pid}/task/${tid}/stat`, "utf8"))[0];
        }),
      );
      if (states.every((state) => state === "T" || state === "t")) return;
    } catch {
      return; // gone: nothing left to answer
    }
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

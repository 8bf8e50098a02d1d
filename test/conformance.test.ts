/**
 * The Connect conformance suite (connectrpc.com/conformance, pinned in
 * test/support/connectconformance.ts) in server mode against the service's own server stack
 * (test/conformance/server.ts): every protocol, codec, compression, stream type and HTTP version
 * the service offers, as test/conformance/config.yaml declares them. A case that fails and is not
 * on test/conformance/known-failing.txt (or known-flaky.txt) fails this test.
 */
import { spawn } from "node:child_process";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";
import { conformanceModuleDir, ensureConnectConformance } from "./support/connectconformance.ts";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const HERE = join(ROOT, "test/conformance");
/** The whole run stays well under this on two cores (about a minute); past it, something hangs. */
const RUN_TIMEOUT_MS = 240_000;
/**
 * RPCs the reference client keeps in flight. Many cases wait on purpose (delays, timeouts), so
 * more than the cores pays off; beyond 8 the two cores of CI gain nothing.
 */
const PARALLEL = 8;
/**
 * Server processes the runner starts at once (its default is 4). The runner gives a server 10 s
 * to answer its handshake, a limit no flag changes, and a server's start is CPU-bound (module
 * loading, the embedded chain's genesis): 2 s alone here, but two starting together beside the
 * suite's heaviest files on two cores took longer than 10 s in a CI run, and that server's 265
 * cases failed with "timed out waiting for result from server". One at a time costs about 12 s of
 * the run's 50 (measured alone) and halves what a start competes with.
 */
const MAX_SERVERS = 1;
/** Node's compile cache for the server processes: every server after the first skips compiling. */
const COMPILE_CACHE = join(ROOT, ".tools/node-compile-cache");

let runner: string;
beforeAll(async () => {
  runner = await ensureConnectConformance();
  // A first start compiles every module into the compile cache and reads them from disk; the
  // runner's servers then start from warm caches, well inside its 10 s.
  await startOnce();
}, 120_000);

describe("Connect conformance suite, server mode", () => {
  it("vendored protos are the pinned module's", async () => {
    const vendored = join(ROOT, "third_party/connectrpc-conformance/proto/connectrpc/conformance/v1");
    const upstream = join(await conformanceModuleDir(), "proto/connectrpc/conformance/v1");
    for (const file of ["config.proto", "server_compat.proto", "service.proto"]) {
      expect(await readFile(join(vendored, file), "utf8"), file).toBe(
        await readFile(join(upstream, file), "utf8"),
      );
    }
  });

  it("every case passes, known failures aside", { timeout: RUN_TIMEOUT_MS + 10_000 }, async () => {
    const started = performance.now();
    const { code, output } = await runSuite(runner);
    const seconds = ((performance.now() - started) / 1000).toFixed(0);
    const summary =
      /Total cases: (\d+)\s+(\d+) passed, (\d+) failed(?:\s+\(Another (\d+) failed as expected)?/.exec(
        output,
      );
    const expected = output.split("\n").filter((line) => line.endsWith("failed (as expected):"));
    process.stderr.write(
      `conformance: ${summary ? `${summary[1]} cases, ${summary[2]} passed, ${summary[3]} failed, ${summary[4] ?? 0} known flaky or failing failed` : "no summary"} in ${seconds} s\n${expected.join("\n")}\n`,
    );
    // The runner's exit code already accounts for the known-failing and known-flaky lists.
    expect(code, output.slice(-20_000)).toBe(0);
    expect(summary, output.slice(-5_000)).not.toBeNull();
  });
});

/**
 * Runs the suite to its end, or for at most RUN_TIMEOUT_MS. The runner gets a process group of its
 * own, and on timeout the whole group is killed: the runner does not stop the servers it started
 * when it is itself stopped, and they must not outlive the test.
 */
function runSuite(binary: string): Promise<{ code: number | null; output: string }> {
  const args = [
    "--mode",
    "server",
    "--conf",
    join(HERE, "config.yaml"),
    "--known-failing",
    `@${join(HERE, "known-failing.txt")}`,
    "--known-flaky",
    `@${join(HERE, "known-flaky.txt")}`,
    "--parallel",
    String(PARALLEL),
    "--max-servers",
    String(MAX_SERVERS),
    "-v",
    "--",
    // The project's Node 24, whatever node is on PATH.
    join(ROOT, "node_modules/.bin/node"),
    join(HERE, "server.ts"),
  ];
  return new Promise((resolve, reject) => {
    const child = spawn(binary, args, {
      cwd: ROOT,
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, NODE_COMPILE_CACHE: COMPILE_CACHE },
    });
    let output = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      output += chunk;
    });
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
      output += chunk;
    });
    const timer = setTimeout(() => {
      output += `\nkilled after ${RUN_TIMEOUT_MS} ms\n`;
      if (child.pid !== undefined) process.kill(-child.pid, "SIGKILL");
    }, RUN_TIMEOUT_MS);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

/**
 * Starts the suite's server once, as the runner does (a size-prefixed ServerCompatRequest, here an
 * empty one, on stdin), waits for its handshake and stops it.
 */
function startOnce(): Promise<void> {
  const child = spawn(join(ROOT, "node_modules/.bin/node"), [join(HERE, "server.ts")], {
    cwd: ROOT,
    stdio: ["pipe", "pipe", "inherit"],
    env: { ...process.env, NODE_COMPILE_CACHE: COMPILE_CACHE },
  });
  child.stdin.end(Buffer.alloc(4));
  return new Promise((resolve, reject) => {
    child.on("error", reject);
    child.stdout.once("data", () => child.kill("SIGTERM"));
    child.on("close", (code, signal) => {
      if (code === 0 || signal === "SIGTERM") resolve();
      else reject(new Error(`the conformance server ended (${signal ?? code}) before its handshake`));
    });
  });
}

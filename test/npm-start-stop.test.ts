/**
 * Stopping what `npm start &` started: killing npm's own pid (what `kill <pid>` of the job does)
 * stops the service too, and its ports (HTTP, chain JSON-RPC, PubSub) are free again, instead of
 * a node process left holding them. The real npm, the real `start` script.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { readdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { accepts, freePort, freePortPair } from "./support/ports.ts";
import { processAlive, readProcStat } from "./support/proc-stat.ts";

const ROOT = fileURLToPath(new URL("..", import.meta.url));

async function until(
  probe: () => Promise<boolean>,
  ms: number,
  what: string,
  output: () => string = () => "",
): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`not within ${ms} ms: ${what}${output()}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** `npm start` on free ports; resolves once it serves, with what it said so far. */
async function startNpm(): Promise<{
  npm: ChildProcess;
  port: number;
  chainPort: number;
  said: () => string;
}> {
  for (let attempt = 1; ; attempt++) {
    // The chain binds its port and the next (PubSub): a pair, and the HTTP port outside it.
    const chainPort = await freePortPair();
    let port = await freePort();
    while (port === chainPort || port === chainPort + 1) port = await freePort();
    const npm = spawn("npm", ["start"], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH ?? "",
        HOME: process.env.HOME ?? "",
        PORT: String(port),
        LOCAL_SOLANA_RPC_PORT: String(chainPort),
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    // What npm and the service said, for a start that fails: the last of it.
    let said = "";
    const keep = (chunk: Buffer) => {
      said = (said + chunk.toString("utf8")).slice(-4_000);
    };
    npm.stdout?.on("data", keep);
    npm.stderr?.on("data", keep);
    let exited = false;
    npm.once("exit", () => {
      exited = true;
    });
    await until(
      async () => exited || (await accepts(port)),
      90_000,
      "npm start serves",
      () => `; it said:\n${said}`,
    );
    if (!exited) return { npm, port, chainPort, said: () => said };
    // A port free when chosen and taken before the service bound it (the machine's other tests
    // open thousands of connections): chosen again. Any other end fails here with what it said.
    if (attempt === 3 || !/is in use/.test(said))
      throw new Error(`npm start ended at once; it said:\n${said}`);
  }
}

/** The processes under `pid` (npm's `sh` and the service), from /proc: Linux, as the tests run. */
function descendants(pid: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const fields = readProcStat(`/proc/${entry}/stat`);
    if (fields === undefined) continue; // gone meanwhile
    const ppid = Number(fields[1]);
    children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)]);
  }
  const out: number[] = [];
  const queue = [pid];
  while (queue.length > 0) {
    for (const child of children.get(queue.shift() as number) ?? []) {
      out.push(child);
      queue.push(child);
    }
  }
  return out;
}

describe("npm start, then kill of npm's pid", () => {
  it("the service stops with npm and frees 8080, 8899 and 8900 (here: free ports)", async () => {
    const { npm, chainPort, said } = await startNpm();
    try {
      expect(await accepts(chainPort)).toBe(true);
      const started = descendants(npm.pid as number);
      expect(started.length).toBeGreaterThan(0);
      npm.kill("SIGTERM");
      // Every process npm started ends, stopped rather than killed (the service says so on its way
      // out; a SIGKILL says nothing): none is left holding the ports. Whether a port accepts
      // afterwards is not asked: on a busy machine another test's server may be given it again.
      await until(
        async () => started.every((pid) => !processAlive(pid)) && /shutting down/.test(said()),
        15_000,
        "the service's processes have exited, shutting down",
        () => `; still alive: [${started.filter(processAlive).join(", ")}]; it said:\n${said()}`,
      );
    } finally {
      npm.kill("SIGKILL");
    }
  }, 130_000);
});

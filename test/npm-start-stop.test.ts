/**
 * Stopping what `npm start &` started: killing npm's own pid (what `kill <pid>` of the job does)
 * stops the service too, and its ports (HTTP, chain JSON-RPC, PubSub) are free again, instead of
 * a node process left holding them. The real npm, the real `start` script.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { accepts, freePort, freePortPair } from "./support/ports.ts";

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

describe("npm start, then kill of npm's pid", () => {
  it("the service stops with npm and frees 8080, 8899 and 8900 (here: free ports)", async () => {
    const { npm, port, chainPort } = await startNpm();
    try {
      expect(await accepts(chainPort)).toBe(true);
      npm.kill("SIGTERM");
      await until(async () => !(await accepts(port)), 15_000, "the HTTP port is free");
      await until(async () => !(await accepts(chainPort)), 5_000, "the chain's port is free");
      await until(async () => !(await accepts(chainPort + 1)), 5_000, "the PubSub port is free");
    } finally {
      npm.kill("SIGKILL");
    }
  }, 130_000);
});

/**
 * Stopping what `npm start &` started: killing npm's own pid (what `kill <pid>` of the job does)
 * stops the service too, and its ports (HTTP, chain JSON-RPC, PubSub) are free again, instead of
 * a node process left holding them. The real npm, the real `start` script.
 */
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { accepts, freePort } from "./support/ports.ts";

const ROOT = fileURLToPath(new URL("..", import.meta.url));

async function until(probe: () => Promise<boolean>, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`not within ${ms} ms: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

describe("npm start, then kill of npm's pid", () => {
  it("the service stops with npm and frees 8080, 8899 and 8900 (here: free ports)", async () => {
    const port = await freePort();
    const chainPort = await freePort();
    const npm = spawn("npm", ["start"], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH ?? "",
        HOME: process.env.HOME ?? "",
        PORT: String(port),
        LOCAL_SOLANA_RPC_PORT: String(chainPort),
      },
      stdio: "ignore",
    });
    try {
      await until(() => accepts(port), 90_000, "npm start serves");
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

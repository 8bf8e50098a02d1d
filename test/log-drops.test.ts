/**
 * A service whose stdout nobody reads: it keeps answering, holds at most LOG_BUFFER_BYTES of log
 * lines, counts the lines it drops in log_lines_dropped_total, and still exits promptly on SIGTERM
 * instead of blocking on the full pipe.
 */
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { freePort } from "./support/ports.ts";

const MAIN = fileURLToPath(new URL("../src/main.ts", import.meta.url));
const PRICES = "/token.v1.TokenService/GetTokenPrices";

async function until(check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check().catch(() => false)) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`not within ${timeoutMs} ms`);
}

const dropped = async (base: string) => {
  const text = await (await fetch(`${base}/metrics`)).text();
  return Number(/^log_lines_dropped_total (\d+)$/m.exec(text)?.[1] ?? Number.NaN);
};

const children: ReturnType<typeof spawn>[] = [];
afterAll(() => {
  for (const child of children) child.kill("SIGKILL");
});

describe("logs nobody reads", () => {
  it("are bounded and counted; calls are answered and the process still exits on SIGTERM", async () => {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const child = spawn(process.execPath, [MAIN], {
      env: {
        PATH: process.env.PATH ?? "",
        HOME: process.env.HOME ?? "",
        AUTH_MODE: "none",
        HOST: "127.0.0.1",
        PORT: String(port),
        LOG_BUFFER_BYTES: "65536",
      },
      // stdout is a pipe this test never reads: once it and its buffers are full, writes block.
      stdio: ["ignore", "pipe", "ignore"],
    });
    children.push(child);
    child.stdout?.pause();
    await until(async () => (await fetch(`${base}/healthz`)).ok, 15_000);
    expect(await dropped(base)).toBe(0);

    // About 260 bytes of log a call: far more than the pipe, Node's buffers and 64 KB together.
    const call = () =>
      fetch(`${base}${PRICES}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: "{}",
      });
    for (let i = 0; i < 40; i++) {
      const answers = await Promise.all(Array.from({ length: 50 }, call));
      for (const answer of answers) {
        expect(answer.status).toBe(200);
        await answer.arrayBuffer();
      }
    }
    const count = await dropped(base);
    expect(count).toBeGreaterThan(0);
    expect(count).toBeLessThanOrEqual(2000);

    // The write blocked on the pipe has been stuck for over a second, and up to 64 KB wait behind
    // it: exit drops them rather than block on the pipe for good.
    await new Promise((r) => setTimeout(r, 1200));
    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
    child.kill("SIGTERM");
    const code = await Promise.race([exited, new Promise((r) => setTimeout(() => r("hung"), 10_000))]);
    expect(code).toBe(0);
  });
});

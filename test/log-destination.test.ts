/**
 * The log destination on real file descriptors: lines arrive whole and in order, batched into
 * few writes; `flush` calls back once they are out; the process's last lines are written by
 * `flushSync` on exit; a full buffer drops lines (and counts them) instead of growing; a reader
 * that goes away (EPIPE) stops the writing without an error reaching the process.
 */
import { spawn } from "node:child_process";
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { createLogDestination } from "../src/log-destination.ts";

const dir = mkdtempSync(join(tmpdir(), "log-destination-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const root = new URL("..", import.meta.url).pathname;

function fileDestination(name: string, options: { maxBufferBytes?: number; flushIntervalMs?: number } = {}) {
  const path = join(dir, name);
  const fd = openSync(path, "w");
  const destination = createLogDestination({ fd, maxBufferBytes: 1 << 20, ...options });
  return { destination, read: () => readFileSync(path, "utf8"), close: () => closeSync(fd) };
}

const flushed = (d: { flush(cb: (e?: Error) => void): void }) =>
  new Promise<void>((resolve, reject) => d.flush((e) => (e ? reject(e) : resolve())));

describe("log destination", () => {
  it("writes every line whole and in order, including multi-byte text", async () => {
    const { destination, read, close } = fileDestination("order.log", { flushIntervalMs: 5 });
    const lines = Array.from({ length: 5000 }, (_, i) => `{"n":${i},"text":"é€😀 ${"x".repeat(i % 50)}"}\n`);
    for (const [i, line] of lines.entries()) {
      destination.write(line);
      // Some lines come while a write is under way, some after it.
      if (i % 997 === 0) await new Promise((r) => setTimeout(r, 2));
    }
    await flushed(destination);
    expect(read()).toBe(lines.join(""));
    expect(destination.dropped).toBe(0);
    close();
  });

  it("waits up to the interval for company, then writes without being asked", async () => {
    const { destination, read, close } = fileDestination("interval.log", { flushIntervalMs: 50 });
    destination.write("one\n");
    destination.write("two\n");
    expect(read()).toBe("");
    await new Promise((r) => setTimeout(r, 300));
    expect(read()).toBe("one\ntwo\n");
    close();
  });

  it("drops lines past its buffer and counts them, then takes lines again once written", async () => {
    const { destination, read, close } = fileDestination("bounded.log", {
      maxBufferBytes: 100,
      flushIntervalMs: 1000,
    });
    for (let i = 0; i < 20; i++) destination.write(`line ${String(i).padStart(3, "0")}\n`); // 9 bytes each
    expect(destination.dropped).toBe(9);
    await flushed(destination);
    destination.write("after\n");
    await flushed(destination);
    expect(read()).toBe(
      `${Array.from({ length: 11 }, (_, i) => `line ${String(i).padStart(3, "0")}\n`).join("")}after\n`,
    );
    close();
  });

  it("writes what it holds when the process exits, and stops quietly when its reader is gone", async () => {
    // A child logs through the destination and exits at once: the lines must reach the pipe.
    const script = `
      import { createLogDestination } from ${JSON.stringify(join(root, "src/log-destination.ts"))};
      const d = createLogDestination({ fd: 1, maxBufferBytes: 1 << 20, flushIntervalMs: 10_000 });
      process.once("exit", () => d.flushSync());
      for (let i = 0; i < 1000; i++) d.write("line " + i + "\\n");
      process.exit(3);
    `;
    const child = spawn(process.execPath, ["--input-type=module", "-e", script], { cwd: root });
    let out = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      out += chunk;
    });
    const code = await new Promise((resolve) => child.once("close", resolve));
    expect(code).toBe(3);
    expect(out).toBe(Array.from({ length: 1000 }, (_, i) => `line ${i}\n`).join(""));

    // A reader that closes its end: writes fail with EPIPE, lines are counted as dropped, and the
    // process carries on (no uncaught error, no crash).
    const epipe = `
      import { createLogDestination } from ${JSON.stringify(join(root, "src/log-destination.ts"))};
      const d = createLogDestination({ fd: 1, maxBufferBytes: 1 << 20 });
      let i = 0;
      const timer = setInterval(() => {
        for (let j = 0; j < 100; j++) d.write("x".repeat(100) + "\\n");
        if (++i === 50) { clearInterval(timer); d.flush(() => { process.stderr.write("dropped " + d.dropped); }); }
      }, 5);
    `;
    const second = spawn(process.execPath, ["--input-type=module", "-e", epipe], { cwd: root });
    second.stdout.destroy();
    let err = "";
    second.stderr.setEncoding("utf8").on("data", (chunk: string) => {
      err += chunk;
    });
    const secondCode = await new Promise((resolve) => second.once("close", resolve));
    expect(secondCode).toBe(0);
    expect(err).toMatch(/^dropped [1-9]\d*$/);
  });
});

/**
 * The process's policy on a promise rejected with nothing to handle it, in a child Node process
 * (the policy is process-wide, and this test's own process belongs to vitest): Node alone exits
 * with code 1; with the policy the rejection is logged at error level, counted, and the process
 * carries on.
 */
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const LOGGER = fileURLToPath(new URL("../src/logger.ts", import.meta.url));
const LIFECYCLE = fileURLToPath(new URL("../src/process-lifecycle.ts", import.meta.url));

/** Runs a process that rejects a promise nobody handles, then (if still alive) logs "carried on". */
function run(withPolicy: boolean): Promise<{ code: number | null; lines: Record<string, unknown>[] }> {
  const script = `
    import { createLogger } from ${JSON.stringify(LOGGER)};
    import { keepServingOnUnhandledRejection } from ${JSON.stringify(LIFECYCLE)};
    const logger = createLogger({ level: "info" });
    let counted = 0;
    if (${withPolicy}) keepServingOnUnhandledRejection(logger, () => counted++);
    Promise.reject(new Error("a forgotten catch"));
    // Node handles unhandled rejections once the microtasks have run, before the next macrotask.
    setImmediate(() => setImmediate(() => {
      logger.info({ counted }, "carried on");
      process.exit(0);
    }));
  `;
  const child = spawn(process.execPath, ["--input-type=module", "-e", script], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
    out += chunk;
  });
  return new Promise((resolve) => {
    child.once("close", (code) => {
      const lines = out
        .split("\n")
        .filter((line) => line.startsWith("{"))
        .map((line) => JSON.parse(line) as Record<string, unknown>);
      resolve({ code, lines });
    });
  });
}

describe("an unhandled rejection", () => {
  it("ends a process without the policy (Node's default), so the policy is what keeps it", async () => {
    const { code, lines } = await run(false);
    expect(code).toBe(1);
    expect(lines.find((l) => l.msg === "carried on")).toBeUndefined();
  });

  it("is logged at error level with its error, counted, and the process carries on", async () => {
    const { code, lines } = await run(true);
    expect(code).toBe(0);
    const logged = lines.find((l) => String(l.msg).startsWith("unhandled promise rejection"));
    expect(logged).toMatchObject({ level: 50, err: { message: "a forgotten catch" } });
    expect(lines.find((l) => l.msg === "carried on")).toMatchObject({ counted: 1 });
  });
});

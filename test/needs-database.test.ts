/**
 * `npx vitest run <file>` starts (and, the first time, builds with Go) FerretDB only when a file
 * asked for, or a support file it imports, can use the database (test/support/needs-database.ts,
 * read by the global setup). Checked against this repository's real test files.
 */
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { runNeedsDatabase } from "./support/needs-database.ts";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const needs = (...args: string[]) => runNeedsDatabase(["node", "vitest.mjs", "run", ...args], ROOT);

describe("whether a vitest run needs the database", () => {
  it("not for files that name no database, directly or through their support files", () => {
    expect(needs("test/first-hour-errors.test.ts")).toBe(false);
    expect(needs("test/needs-database.test.ts", "-t", "anything")).toBe(false);
    expect(needs("first-agents")).toBe(false);
  });

  it("for a file that uses it, directly or through a support file, and for the whole suite", () => {
    expect(needs("test/agent-store.test.ts")).toBe(true);
    // swap-agent.test.ts reaches the database through support/agent-on-chain.ts's agentStores.
    expect(needs("test/swap-agent.test.ts")).toBe(true);
    expect(needs("test/first-hour-errors.test.ts", "test/agent-store.test.ts")).toBe(true);
    expect(needs()).toBe(true);
    expect(needs("--config", "vitest.slow.config.ts")).toBe(true);
    // A filter that matches no file: vitest decides; the database is provided as before.
    expect(needs("no-such-file")).toBe(true);
  });
});

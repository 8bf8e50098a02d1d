import { defineConfig } from "vitest/config";
import { LongestFirstSequencer } from "./test/support/longest-first-sequencer.ts";
import { NODE_COMPILE_CACHE } from "./test/support/main-process.ts";

// Node's compile cache for the workers and what they start, as in vitest.config.ts.
process.env.NODE_COMPILE_CACHE ??= NODE_COMPILE_CACHE;

/**
 * The slow tests, after the main suite (see vitest.config.ts), in two groups, one after the other:
 * - several service processes and a database under load (exactly once across replicas,
 *   idempotency through a database crash): two files at a time. Their checks count what landed,
 *   whatever the timing, and they spend most of their time waiting on schedule slots;
 * - the probes that time the service's answers while the embedded chain is busy: alone, so that
 *   no other file decides whether a 150 ms bound holds.
 */
const shared = {
  globalSetup: ["test/support/mongo-global-setup.ts", "test/support/local-chain-global-setup.ts"],
  // Tests that use the shared server fail with its cause once it has ended.
  setupFiles: ["test/support/mongo-down.ts"],
  testTimeout: 300_000,
  hookTimeout: 240_000,
  pool: "forks" as const,
};
const PROBES = "test/local-chain-worker.slow.test.ts";

export default defineConfig({
  test: {
    // The load tests in the order that keeps the two heavy ones apart (longest-first-sequencer.ts).
    sequence: { sequencer: LongestFirstSequencer },
    projects: [
      {
        test: {
          ...shared,
          name: "load",
          include: ["test/**/*.slow.test.ts"],
          exclude: [PROBES],
          maxWorkers: 2,
          sequence: { groupOrder: 0 },
        },
      },
      {
        test: {
          ...shared,
          name: "probes",
          include: [PROBES],
          maxWorkers: 1,
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});

import { availableParallelism } from "node:os";
import { defineConfig } from "vitest/config";
import { LongestFirstSequencer } from "./test/support/longest-first-sequencer.ts";
import { NODE_COMPILE_CACHE } from "./test/support/main-process.ts";

// Node's compile cache for the workers and everything they start (the embedded chain's worker
// thread of each server a test starts, its modules loaded anew each time): each load after the
// first reads the compiled modules instead of compiling them (a server's start: about 0.9 s of
// CPU without it, 0.6 s with it). Set before the workers are forked, which inherit it.
process.env.NODE_COMPILE_CACHE ??= NODE_COMPILE_CACHE;

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // Load tests with several processes run alone afterwards (vitest.slow.config.ts), so that
    // sharing two cores with the rest of the suite does not decide whether they pass.
    exclude: ["test/**/*.slow.test.ts", "**/node_modules/**"],
    // Provides a MongoDB-compatible server (MONGODB_URI, or FerretDB built and started here).
    globalSetup: ["test/support/mongo-global-setup.ts", "test/support/local-chain-global-setup.ts"],
    // Tests that use the shared server fail with its cause once it has ended.
    setupFiles: ["test/support/mongo-down.ts"],
    // Servers and databases are real; give them time, and keep two cores from thrashing.
    testTimeout: 30_000,
    hookTimeout: 240_000,
    pool: "forks",
    // One file more than the cores (vitest's default is one fewer: one file here). Most files wait
    // on sockets, timers and schedule slots rather than compute (two files at a time kept the two
    // cores 18-84 % busy), so a third file fills that wait; the load tests that need the cores alone
    // run afterwards (vitest.slow.config.ts).
    maxWorkers: availableParallelism() + 1,
    sequence: { sequencer: LongestFirstSequencer },
  },
});

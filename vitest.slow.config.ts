import { defineConfig } from "vitest/config";

/**
 * The slow tests: several service processes and a database under load (exactly once across
 * replicas, idempotency through a database crash). They run after the main suite, one file at a
 * time, so their timing does not depend on what else shares the machine's two cores.
 */
export default defineConfig({
  test: {
    include: ["test/**/*.slow.test.ts"],
    globalSetup: ["test/support/mongo-global-setup.ts", "test/support/local-chain-global-setup.ts"],
    // Tests that use the shared server fail with its cause once it has ended.
    setupFiles: ["test/support/mongo-down.ts"],
    testTimeout: 300_000,
    hookTimeout: 240_000,
    pool: "forks",
    fileParallelism: false,
  },
});

import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // Load tests with several processes run alone afterwards (vitest.slow.config.ts), so that
    // sharing two cores with the rest of the suite does not decide whether they pass.
    exclude: ["test/**/*.slow.test.ts", "**/node_modules/**"],
    // Provides a MongoDB-compatible server (MONGODB_URI, or FerretDB built and started here).
    globalSetup: ["test/support/mongo-global-setup.ts", "test/support/local-chain-global-setup.ts"],
    // Servers and databases are real; give them time, and keep two cores from thrashing.
    testTimeout: 30_000,
    hookTimeout: 240_000,
    pool: "forks",
  },
});

/**
 * Vitest setup file: in a test file that uses the shared MongoDB-compatible server, every test
 * first checks that the server is still up. Once the shared FerretDB has ended (see
 * mongo-global-setup.ts), each such test fails at once with how it ended and its last output,
 * instead of a driver's server-selection error that names no cause.
 */
import { existsSync, readFileSync } from "node:fs";
import { beforeEach, expect, inject } from "vitest";

/** What marks a test file as one that talks to the shared server. */
const USES_SHARED_MONGO = /inject\("mongoUri"\)|agent-on-chain\.ts|replica-kills\.ts/;

const downFile = inject("mongoDownFile");
const testPath = expect.getState().testPath;
if (downFile !== "" && testPath !== undefined && USES_SHARED_MONGO.test(readFileSync(testPath, "utf8"))) {
  beforeEach(() => {
    if (existsSync(downFile)) throw new Error(readFileSync(downFile, "utf8"));
  });
}

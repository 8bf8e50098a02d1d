/**
 * Vitest global setup: provides a MongoDB-compatible server to every test file as
 * `inject("mongoUri")`. MONGODB_URI wins when set (nothing is started); otherwise a FerretDB is
 * built if needed, started for the run and stopped at the end, unless the files the command line
 * names use no database (see needs-database.ts). Test files must use their own
 * database names on it, and drop them.
 *
 * Should the shared FerretDB end during the run, how it ended (exit code or signal, its last
 * output) is written to stderr at once and to the file `inject("mongoDownFile")` names, so that
 * every later test of a file that uses it fails with that text (test/support/mongo-down.ts)
 * rather than with a driver's connection error half a minute later.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { TestProject } from "vitest/node";
import { ensureFerretdbBinary, type FerretdbExit, startFerretdb } from "./ferretdb.ts";
import { runNeedsDatabase } from "./needs-database.ts";

/** Given to a run whose files name no database: nothing listens there. */
const NO_DATABASE = "mongodb://127.0.0.1:1";

declare module "vitest" {
  export interface ProvidedContext {
    /** A server URI without a database name. */
    mongoUri: string;
    /** A file that exists once the shared test server has ended, holding why; "" with MONGODB_URI. */
    mongoDownFile: string;
  }
}

export default async function setup(project: TestProject): Promise<(() => Promise<void>) | undefined> {
  const fromEnv = process.env.MONGODB_URI;
  if (fromEnv !== undefined && fromEnv !== "") {
    project.provide("mongoUri", fromEnv);
    project.provide("mongoDownFile", "");
    return undefined;
  }
  // `npx vitest run test/x.test.ts` for a file that needs no database: no FerretDB to build or start.
  if (!runNeedsDatabase(process.argv, fileURLToPath(new URL("../..", import.meta.url)))) {
    project.provide("mongoUri", NO_DATABASE);
    project.provide("mongoDownFile", "");
    return undefined;
  }
  await ensureFerretdbBinary();
  const server = await startFerretdb();
  const stateDir = mkdtempSync(join(tmpdir(), "ferretdb-shared-"));
  const downFile = join(stateDir, "down.txt");
  server.onUnexpectedExit((exit) => {
    const text = describeExit(exit);
    process.stderr.write(`\n${text}\n`);
    writeFileSync(downFile, text);
  });
  project.provide("mongoUri", server.uri);
  project.provide("mongoDownFile", downFile);
  return async () => {
    await server.stop();
    rmSync(stateDir, { recursive: true, force: true });
  };
}

function describeExit(exit: FerretdbExit): string {
  const how = exit.signal !== null ? `killed by ${exit.signal}` : `exited with code ${exit.code}`;
  return (
    `The shared test FerretDB (pid ${exit.pid}, 127.0.0.1:${exit.port}) ${how} at ${exit.at.toISOString()}, ` +
    `during the run; every later test that uses MongoDB fails. Its last output:\n${exit.output || "(none)"}`
  );
}

/**
 * Vitest global setup: provides a MongoDB-compatible server to every test file as
 * `inject("mongoUri")`. MONGODB_URI wins when set (nothing is started); otherwise a FerretDB is
 * built if needed, started for the run and stopped at the end, unless the files the command line
 * names use no database (see needs-database.ts). Test files must use their own
 * database names on it, and drop them.
 */

import { fileURLToPath } from "node:url";
import type { TestProject } from "vitest/node";
import { ensureFerretdbBinary, startFerretdb } from "./ferretdb.ts";
import { runNeedsDatabase } from "./needs-database.ts";

/** Given to a run whose files name no database: nothing listens there. */
const NO_DATABASE = "mongodb://127.0.0.1:1";

declare module "vitest" {
  export interface ProvidedContext {
    /** A server URI without a database name. */
    mongoUri: string;
  }
}

export default async function setup(project: TestProject): Promise<(() => Promise<void>) | undefined> {
  const fromEnv = process.env.MONGODB_URI;
  if (fromEnv !== undefined && fromEnv !== "") {
    project.provide("mongoUri", fromEnv);
    return undefined;
  }
  // `npx vitest run test/x.test.ts` for a file that needs no database: no FerretDB to build or start.
  if (!runNeedsDatabase(process.argv, fileURLToPath(new URL("../..", import.meta.url)))) {
    project.provide("mongoUri", NO_DATABASE);
    return undefined;
  }
  await ensureFerretdbBinary();
  const server = await startFerretdb();
  project.provide("mongoUri", server.uri);
  return () => server.stop();
}

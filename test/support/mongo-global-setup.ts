/**
 * Vitest global setup: provides a MongoDB-compatible server to every test file as
 * `inject("mongoUri")`. MONGODB_URI wins when set (nothing is started); otherwise a FerretDB is
 * built if needed, started for the run and stopped at the end. Test files must use their own
 * database names on it, and drop them.
 */
import type { TestProject } from "vitest/node";
import { ensureFerretdbBinary, startFerretdb } from "./ferretdb.ts";

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
  await ensureFerretdbBinary();
  const server = await startFerretdb();
  project.provide("mongoUri", server.uri);
  return () => server.stop();
}

import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

const MAIN = fileURLToPath(new URL("../../src/main.ts", import.meta.url));

/**
 * Whether `pid` is still a service that test/support/docs-server.ts started (node running
 * src/main.ts). A pid from its pid file may have ended and, on a busy machine, belong to another
 * process by now: pid_max is 32768 here and wraps within minutes of a test run, so the pid of
 * a server stopped long ago may be the test run's FerretDB. Such a pid is never signalled.
 */
export function isDocsServer(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").includes(MAIN);
  } catch {
    return false;
  }
}

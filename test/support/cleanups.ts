import { afterEach } from "vitest";

/**
 * Registers an afterEach that undoes, newest first, whatever the test deferred (servers, databases,
 * streams), whether the test passed or not. Call it at the top level of a test file.
 */
export function useCleanups(): (cleanup: () => Promise<void>) => void {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => {});
  });
  return (cleanup) => {
    cleanups.push(cleanup);
  };
}

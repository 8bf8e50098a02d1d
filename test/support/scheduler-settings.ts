import type { SchedulerOptions } from "../../src/scheduler/scheduler.ts";

/**
 * The settings of a scheduler that a test (or the bench) drives itself with `tick()` on a clock of
 * its own: a poll interval that never fires, a lease longer than any test, and retries a
 * millisecond apart so that a failing executor settles its slot at once.
 */
export function tickedSchedulerSettings(): Pick<
  SchedulerOptions,
  | "concurrency"
  | "pollIntervalMs"
  | "leaseMs"
  | "attemptTimeoutMs"
  | "maxAttempts"
  | "retryBaseMs"
  | "retryMaxMs"
  | "maxConsecutiveFailures"
> {
  return {
    concurrency: 8,
    pollIntervalMs: 1_000_000,
    leaseMs: 30_000,
    attemptTimeoutMs: 5_000,
    maxAttempts: 3,
    retryBaseMs: 1,
    retryMaxMs: 2,
    maxConsecutiveFailures: 3,
  };
}

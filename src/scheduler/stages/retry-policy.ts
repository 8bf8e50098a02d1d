/**
 * The retry and failure policy: whether an attempt settles its slot, how long to wait before the
 * next attempt, and how a settled slot moves its agent on (its next slot, its run of failures, and
 * failed after too many of them).
 */
import type { AgentPatch, AgentRecord } from "../../agent/agent-store.ts";
import { retryDelayMs } from "../../domain/backoff.ts";
import type { ExecutionResult } from "../executor.ts";
import type { RunRecord } from "../run-store.ts";

export interface RetryPolicyOptions {
  /** Attempts per slot, the first included. */
  readonly maxAttempts: number;
  readonly retryBaseMs: number;
  readonly retryMaxMs: number;
  /** Consecutive failed runs (slots) after which the agent becomes failed. */
  readonly maxConsecutiveFailures: number;
  readonly random?: (() => number) | undefined;
}

/** How a settled slot changes its agent: the patch, and the reason when it fails the agent. */
export interface Advance {
  readonly patch: AgentPatch;
  readonly failed?: string | undefined;
}

export interface RetryPolicy {
  /** Whether attempt `attempt`, ending with `outcome`, settles its slot (no attempt follows). */
  settles(outcome: ExecutionResult, attempt: number): boolean;
  /** How long to wait after failed attempt `attempt` before the next one. */
  delayAfter(attempt: number): number;
  /**
   * How `current` moves past the slot `run` settled, `next` saying where it goes (the slot after
   * it, or a kind's own move: see AgentTiming); undefined when it has moved already (the change is
   * harmless to repeat).
   */
  advance(
    current: AgentRecord,
    run: RunRecord,
    next: (agent: AgentRecord, run: RunRecord) => AgentPatch,
  ): Advance | undefined;
}

export function createRetryPolicy(options: RetryPolicyOptions): RetryPolicy {
  return {
    // A failure another attempt cannot mend (no allowance, too little balance) settles at once.
    settles: (outcome, attempt) =>
      outcome.ok || outcome.retryable === false || attempt >= options.maxAttempts,
    delayAfter: (attempt) =>
      retryDelayMs(attempt, {
        baseMs: options.retryBaseMs,
        maxMs: options.retryMaxMs,
        ...(options.random === undefined ? {} : { random: options.random }),
      }),
    advance(current, run, next) {
      const atThisSlot =
        current.status === "active" && current.nextRunAt?.getTime() === run.scheduledAt.getTime();
      // Paused (or failed) while the run went on: record that it ran, schedule nothing.
      const ranMeanwhile =
        current.status !== "active" && (current.lastRunAt?.getTime() ?? 0) < run.finishedAt.getTime();
      if (!atThisSlot && !ranMeanwhile) return undefined;
      // A skipped slot (out of a swap's price band) neither ends nor extends a run of failures.
      const failures =
        run.outcome === "succeeded"
          ? 0
          : run.outcome === "skipped"
            ? (current.consecutiveFailures ?? 0)
            : (current.consecutiveFailures ?? 0) + 1;
      if (atThisSlot && failures >= options.maxConsecutiveFailures) {
        const failed = `${failures} consecutive runs failed, the last with: ${run.error ?? "an error"}`;
        return {
          patch: {
            status: "failed",
            nextRunAt: null,
            lastRunAt: run.finishedAt,
            consecutiveFailures: failures,
            failureReason: failed,
          },
          failed,
        };
      }
      const patch: AgentPatch = { lastRunAt: run.finishedAt, consecutiveFailures: failures };
      // Every slot runs, in order, missed ones included: the next slot after this one.
      if (atThisSlot) return { patch: { ...patch, ...next(current, run) } };
      // Paused while a run went on that ended what the agent was for (a trigger order filled):
      // it ends so, whatever its status, as the kind says.
      const moved = run.outcome === "succeeded" ? next(current, run) : undefined;
      return {
        patch: moved?.status !== undefined && moved.status !== "active" ? { ...patch, ...moved } : patch,
      };
    },
  };
}

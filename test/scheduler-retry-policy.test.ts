/**
 * The retry and failure policy alone: which attempts settle a slot, the waits between attempts, and
 * how a settled slot moves its agent (its next slot, its run of failures, failed after too many).
 */
import { describe, expect, it } from "vitest";
import type { RunOutcome, RunRecord } from "../src/scheduler/run-store.ts";
import { createRetryPolicy } from "../src/scheduler/stages/retry-policy.ts";
import { HOUR, hourlyAgent, slot } from "./support/stage-agents.ts";

const policy = createRetryPolicy({
  maxAttempts: 3,
  retryBaseMs: 100,
  retryMaxMs: 1_000,
  maxConsecutiveFailures: 3,
  random: () => 0.5,
});

/** The settling run of the agent's first slot. */
function settling(outcome: RunOutcome, error?: string): RunRecord {
  const agent = hourlyAgent();
  return {
    runId: "r",
    agentId: agent.agentId,
    owner: agent.owner,
    scheduledAt: slot(1),
    attempt: 1,
    startedAt: slot(1),
    finishedAt: new Date(slot(1).getTime() + 1_000),
    outcome,
    ...(error === undefined ? {} : { error }),
  };
}
const next = () => ({ nextRunAt: slot(2) });

describe("retry policy", () => {
  it("settles a slot on success, on a failure no attempt can mend, and on the last allowed attempt", () => {
    expect(policy.settles({ ok: true, result: {} }, 1)).toBe(true);
    expect(policy.settles({ ok: true, result: {}, skipped: true }, 1)).toBe(true);
    expect(policy.settles({ ok: false, error: "no allowance", retryable: false }, 1)).toBe(true);
    expect(policy.settles({ ok: false, error: "timeout" }, 1)).toBe(false);
    expect(policy.settles({ ok: false, error: "timeout", retryable: true }, 2)).toBe(false);
    expect(policy.settles({ ok: false, error: "timeout" }, 3)).toBe(true);
  });

  it("waits a jittered share of an exponential step between attempts, capped", () => {
    expect([1, 2, 3, 4, 5, 9].map((attempt) => policy.delayAfter(attempt))).toEqual([
      50, 100, 200, 400, 500, 500,
    ]);
  });

  it("moves an agent at the slot to its next slot, ending a run of failures on success", () => {
    const run = settling("succeeded");
    const moved = policy.advance(hourlyAgent({ consecutiveFailures: 2 }), run, next);
    expect(moved).toEqual({
      patch: { lastRunAt: run.finishedAt, consecutiveFailures: 0, nextRunAt: slot(2) },
    });
  });

  it("counts a failed slot, and leaves the count alone for a skipped one", () => {
    const failed = settling("failed", "boom");
    expect(policy.advance(hourlyAgent({ consecutiveFailures: 1 }), failed, next)?.patch).toEqual({
      lastRunAt: failed.finishedAt,
      consecutiveFailures: 2,
      nextRunAt: slot(2),
    });
    const skipped = settling("skipped");
    expect(policy.advance(hourlyAgent({ consecutiveFailures: 1 }), skipped, next)?.patch).toMatchObject({
      consecutiveFailures: 1,
      nextRunAt: slot(2),
    });
  });

  it("fails the agent at its last allowed failed slot, saying why", () => {
    const run = settling("failed", "too little balance");
    const moved = policy.advance(hourlyAgent({ consecutiveFailures: 2 }), run, next);
    const reason = "3 consecutive runs failed, the last with: too little balance";
    expect(moved).toEqual({
      patch: {
        status: "failed",
        nextRunAt: null,
        lastRunAt: run.finishedAt,
        consecutiveFailures: 3,
        failureReason: reason,
      },
      failed: reason,
    });
  });

  it("leaves an agent that has moved past the slot alone", () => {
    expect(policy.advance(hourlyAgent({ nextRunAt: slot(2) }), settling("succeeded"), next)).toBeUndefined();
  });

  it("records that a paused agent ran, and schedules nothing", () => {
    const run = settling("failed", "boom");
    const paused = hourlyAgent({ status: "paused", nextRunAt: undefined, consecutiveFailures: 2 });
    // Not failed either: the pause came first, and a paused agent has no slot to fail at.
    expect(policy.advance(paused, run, next)).toEqual({
      patch: { lastRunAt: run.finishedAt, consecutiveFailures: 3 },
    });
    const ranSince = { ...paused, lastRunAt: new Date(run.finishedAt.getTime() + HOUR) };
    expect(policy.advance(ranSince, run, next)).toBeUndefined();
  });
});

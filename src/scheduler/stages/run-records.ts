/**
 * Run records: each finished attempt as the run history keeps it, stored under the slot's lease and
 * then told (metrics, the event log). An attempt the store refuses (the lease was lost, or someone
 * else recorded it) is told to no one.
 */
import type { RunAnnouncer } from "../../events/run-announcer.ts";
import type { ExecutionResult } from "../executor.ts";
import type { Lease, RunRecord, RunStore, SlotRef } from "../run-store.ts";
import { runIdOf } from "../run-store.ts";

export interface RunRecordsOptions {
  readonly runs: Pick<RunStore, "record">;
  /** This replica's name, told with each run. */
  readonly worker: string;
  /** One finished attempt, with the schedule lag (run start minus slot) in ms. */
  readonly onRun?: ((run: RunRecord, lagMs: number, worker: string) => void) | undefined;
  /** Tells the event log of each attempt once it is recorded. */
  readonly runEvents?: Pick<RunAnnouncer, "finished"> | undefined;
}

/** One attempt at a slot, as it ended. */
export interface Attempt {
  readonly slot: SlotRef;
  readonly attempt: number;
  readonly startedAt: Date;
  readonly finishedAt: Date;
  readonly outcome: ExecutionResult;
}

export interface RunRecords {
  /** The run record of an attempt. */
  of(attempt: Attempt): RunRecord;
  /**
   * Stores `run` under `lease` (settling the slot when `settles`, with the day's earlier successes
   * when the slot learned them) and tells of it; false when the store refused it.
   */
  record(
    lease: Lease,
    run: RunRecord,
    options: { settles: boolean; today?: readonly RunRecord[] | undefined },
  ): Promise<boolean>;
}

export function createRunRecords(options: RunRecordsOptions): RunRecords {
  return {
    of: ({ slot, attempt, startedAt, finishedAt, outcome }) => ({
      runId: runIdOf(slot, attempt),
      agentId: slot.agentId,
      owner: slot.owner,
      scheduledAt: slot.scheduledAt,
      attempt,
      startedAt,
      finishedAt,
      outcome: outcome.ok ? (outcome.skipped === true ? "skipped" : "succeeded") : "failed",
      ...(outcome.ok ? { result: outcome.result } : { error: outcome.error }),
    }),
    async record(lease, run, { settles, today }) {
      const recorded = await options.runs.record(lease, run, {
        now: run.finishedAt,
        settles,
        ...(today === undefined ? {} : { today }),
      });
      if (recorded !== "recorded") return false;
      options.onRun?.(run, run.startedAt.getTime() - run.scheduledAt.getTime(), options.worker);
      await options.runEvents?.finished(run);
      return true;
    },
  };
}

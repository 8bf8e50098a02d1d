import type { JsonObject } from "../agent/agent-store.ts";
import type { RunRecord, SlotRef } from "../scheduler/run-store.ts";
import { runIdOf } from "../scheduler/run-store.ts";
import type { EventLog, NewEvent } from "./event-log.ts";

/** What the scheduler tells of its runs: each attempt as it starts, and as it is recorded. */
export interface RunAnnouncer {
  started(slot: SlotRef, attempt: number, startedAt: Date): Promise<void>;
  finished(run: RunRecord): Promise<void>;
}

/**
 * run.started, run.succeeded and run.failed in the event log, one per attempt each (keyed by the
 * run id, so an attempt told twice is one event). An append that fails is reported and skipped:
 * it never fails or repeats a run.
 */
export function createRunAnnouncer(options: {
  readonly log: EventLog;
  readonly onError?: (error: unknown) => void;
}): RunAnnouncer {
  const { log } = options;
  const append = async (...args: Parameters<EventLog["append"]>) => {
    try {
      await log.append(...args);
    } catch (error) {
      options.onError?.(error);
    }
  };
  return {
    started: (slot, attempt, startedAt) => append(runStartedEvent(slot, attempt, startedAt)),
    finished: (run) => append(runFinishedEvent(run)),
  };
}

/** run.started of one attempt, as the scheduler and the repair both make it. */
export function runStartedEvent(slot: SlotRef, attempt: number, startedAt: Date): NewEvent {
  const runId = runIdOf(slot, attempt);
  return {
    type: "run.started",
    owner: slot.owner,
    agentId: slot.agentId,
    at: startedAt,
    key: `${runId}:started`,
    data: {
      run: {
        runId,
        attempt,
        scheduledAt: slot.scheduledAt.toISOString(),
        startedAt: startedAt.toISOString(),
      },
    },
  };
}

/** run.succeeded, run.skipped or run.failed of one recorded attempt. */
export function runFinishedEvent(run: RunRecord): NewEvent {
  const data: JsonObject = {
    runId: run.runId,
    attempt: run.attempt,
    scheduledAt: run.scheduledAt.toISOString(),
    startedAt: run.startedAt.toISOString(),
    finishedAt: run.finishedAt.toISOString(),
    outcome: run.outcome,
    ...(run.result === undefined ? {} : { result: run.result }),
    ...(run.error === undefined ? {} : { error: run.error }),
  };
  return {
    type: `run.${run.outcome}`,
    owner: run.owner,
    agentId: run.agentId,
    at: run.finishedAt,
    key: `${run.runId}:finished`,
    data: { run: data },
  };
}

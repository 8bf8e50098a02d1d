/**
 * A claimed slot's run: attempts under the kept lease until one settles the slot (see RetryPolicy),
 * each recorded as it finishes (see RunRecords); the settling one moves the agent on. A run whose
 * lease is lost, or that is stopped, records nothing more: whatever happened is not its to record.
 */
import type { AgentRecord, AgentStore } from "../../agent/agent-store.ts";
import type { RunAnnouncer } from "../../events/run-announcer.ts";
import { abortableSleep } from "../abortable-sleep.ts";
import { type Execution, type ExecutionResult, type Executor, executionKeyOf } from "../executor.ts";
import type { Lease, RunRecord, RunStore, SlotRef } from "../run-store.ts";
import type { AgentSlots } from "./agent-slots.ts";
import { keepLease } from "./kept-lease.ts";
import type { RetryPolicy } from "./retry-policy.ts";
import type { RunRecords } from "./run-records.ts";
import { createSlotJournal } from "./slot-journal.ts";

export interface RunSlotOptions {
  readonly runs: Pick<
    RunStore,
    "renew" | "release" | "attempts" | "transactions" | "recordTransaction" | "succeededToday"
  >;
  readonly executor: Executor;
  readonly policy: Pick<RetryPolicy, "settles" | "delayAfter">;
  readonly records: RunRecords;
  readonly slots: Pick<AgentSlots, "before">;
  /** Reads an agent again for a run about to sign (see ExecutionJournal.stillWanted). */
  readonly get?: AgentStore["get"] | undefined;
  /** Moves the agent past the slot its run settled. */
  readonly advance: (agent: AgentRecord, run: RunRecord) => Promise<void>;
  readonly leaseMs: number;
  readonly renewEveryMs: number;
  /** Bound on one attempt; past it the attempt is aborted and counts as failed. */
  readonly attemptTimeoutMs: number;
  /** The scheduler is stopping: no new attempt. */
  readonly stopping: () => boolean;
  readonly now: () => Date;
  /** Tells the event log of each attempt as it starts. */
  readonly runEvents?: Pick<RunAnnouncer, "started"> | undefined;
  readonly onError?: ((error: unknown, what: string) => void) | undefined;
}

/** One run of a claimed slot. */
export interface SlotRun {
  readonly agent: AgentRecord;
  /** The lease the slot was claimed with. */
  readonly first: Lease;
  /** Aborted when the run must stop (the scheduler stops, or the lease is lost). */
  readonly abort: AbortController;
  /** Waits for `work` out of the concurrency count (see Execution.awaitingUpstream); absent: no upstream. */
  readonly awaitingUpstream?: Execution["awaitingUpstream"] | undefined;
}

export type RunSlot = (run: SlotRun) => Promise<void>;

export function createRunSlot(options: RunSlotOptions): RunSlot {
  const { runs, executor, policy, records, now } = options;
  return async ({ agent, first, abort, awaitingUpstream }) => {
    let finished = false;
    const slot: SlotRef = first;
    const lease = keepLease({
      runs,
      first,
      leaseMs: options.leaseMs,
      renewEveryMs: options.renewEveryMs,
      now,
      onLost: () => abort.abort(new Error("lease lost")),
      onError: (error) => options.onError?.(error, "renewing a lease"),
    });
    const journal = createSlotJournal({
      runs,
      agent,
      first,
      lease: lease.current,
      slotBefore: options.slots.before,
      ...(options.get === undefined ? {} : { get: options.get }),
      now,
    });
    try {
      // A first claim starts at attempt 1; a taken-over or released slot continues the count.
      let attempt = first.generation === 0 ? 1 : (await runs.attempts(slot)) + 1;
      while (!abort.signal.aborted) {
        const startedAt = now();
        await options.runEvents?.started(slot, attempt, startedAt);
        const attemptAbort = AbortSignal.any([abort.signal, AbortSignal.timeout(options.attemptTimeoutMs)]);
        const outcome = await executor
          .execute({
            agent,
            scheduledAt: slot.scheduledAt,
            attempt,
            idempotencyKey: executionKeyOf(slot.agentId, slot.scheduledAt),
            signal: attemptAbort,
            journal,
            ...(awaitingUpstream === undefined ? {} : { awaitingUpstream }),
          })
          .catch((): ExecutionResult => ({ ok: false, error: "the executor failed unexpectedly" }));
        // Lost or stopped mid-attempt: whatever happened is not ours to record.
        if (abort.signal.aborted || lease.current() === undefined) return;
        const run = records.of({ slot, attempt, startedAt, finishedAt: now(), outcome });
        const settles = policy.settles(outcome, attempt);
        // The day's earlier successes travel with a settling run, when this slot learned them.
        const learnt = settles ? journal.dayBefore() : undefined;
        const today = learnt === undefined ? undefined : await learnt;
        // Under the lease as renewed by now: the heartbeat may have renewed it meanwhile.
        if (!(await records.record(lease.current() as Lease, run, { settles, today }))) return;
        if (settles) {
          // A settled slot cannot be claimed again, so its lease needs no release.
          finished = true;
          await options.advance(agent, run);
          return;
        }
        await abortableSleep(policy.delayAfter(attempt), abort.signal);
        // Stopping: no new attempt (it could send a transfer the shutdown deadline then cuts off);
        // the lease is released below, so another replica goes on at once.
        if (options.stopping()) return;
        attempt++;
      }
    } finally {
      lease.stop();
      // Stopped between attempts or after the executor returned: nothing of ours runs any more, so
      // another replica may take the slot at once instead of waiting for the lease to expire.
      const held = lease.current();
      if (!finished && options.stopping() && held !== undefined) {
        await runs.release(held).catch((error: unknown) => options.onError?.(error, "releasing a lease"));
      }
    }
  };
}

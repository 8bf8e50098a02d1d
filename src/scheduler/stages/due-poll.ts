/**
 * One poll: activates pending agents beside a single look at the due agents (see DueSlots), then
 * claims and starts what it can of them, a few at a time: a poll costs a few round trips rather
 * than a few per agent, without flooding the database with every due agent's claims at once.
 */
import type { AgentRecord } from "../../agent/agent-store.ts";
import type { Executor, UpstreamBound } from "../executor.ts";
import type { Lease, RunRecord, RunStore } from "../run-store.ts";
import { type DueSlots, slotKeyOf } from "./due-slots.ts";
import { forEachConcurrently, POLL_PARALLELISM } from "./for-each-concurrently.ts";
import { isRecent, type Look } from "./look.ts";
import type { PendingActivation } from "./pending-activation.ts";
import type { RunCapacity } from "./run-capacity.ts";
import type { SlotClaims } from "./slot-claims.ts";

export interface DuePollOptions {
  readonly dueSlots: Pick<DueSlots, "find" | "handled" | "endedHere" | "claimed">;
  readonly claims: SlotClaims;
  readonly activation: Pick<PendingActivation, "round">;
  readonly capacity: Pick<RunCapacity, "running" | "free" | "enterUpstream" | "leaveUpstream" | "clearFull">;
  readonly runs: Pick<RunStore, "release">;
  readonly executor: Pick<Executor, "upstreamOf">;
  /** Moves the agent past a settled slot. */
  readonly advance: (agent: AgentRecord, run: RunRecord) => Promise<void>;
  /** Starts the run of a claimed slot, with its place on `upstream` taken. */
  readonly startRun: (agent: AgentRecord, lease: Lease, upstream: UpstreamBound | undefined) => void;
  /** How long a look serves the polls of a backlog (see REUSE_MS in scheduler.ts). */
  readonly reuseMs: number;
  readonly stopping: () => boolean;
  readonly now: () => Date;
}

/** One poll, told whether the last left a backlog; resolves with whether more due work was left than it could start. */
export type DuePoll = (backlog: boolean) => Promise<boolean>;

export function createDuePoll(options: DuePollOptions): DuePoll {
  const { dueSlots, capacity, stopping } = options;
  /** When pending agents were last looked at. */
  let lastPendingLook: Look | undefined;
  /** Due agents the last poll left for a full upstream. */
  let leftForUpstreams = 0;

  return async (backlog) => {
    if (stopping()) return false;
    const at = { nowMs: options.now().getTime(), realMs: performance.now() };
    // Pending agents are paged through beside the due query, at capacity too: activating one
    // starts nothing. While a backlog drains, polls come a few runs apart; pending agents wait
    // 0.5 s or more between checks anyway, so they are looked at once per REUSE_MS then: on a
    // store without indexes (FerretDB) each look reads every agent.
    const lookAtPending = !backlog || !isRecent(lastPendingLook, at, options.reuseMs);
    if (lookAtPending) lastPendingLook = { ...at, tookMs: 0 };
    const activated = lookAtPending ? options.activation.round(lastPendingLook as Look) : Promise.resolve();
    const free = capacity.free();
    if (free <= 0) {
      await activated;
      // Nothing looked at: what the last poll knew of a backlog still holds. (Saying "none" here
      // made the next poll of a saturated replica ask the store afresh, and look at pending agents,
      // every poll interval: on FerretDB at 10,000 agents most of its CPU.)
      return backlog;
    }
    const { running } = capacity;
    const found = await dueSlots.find(at, { running, free, leftForUpstreams, backlog, alongside: activated });
    const { runnable } = found;
    /** Claims under way, so that concurrent claims cannot overfill `concurrency`. */
    let claiming = 0;
    let started = 0;
    let tried = 0;
    /** Agents left because the upstream they would wait on is full: a run ending there polls again. */
    let left = 0;
    /**
     * Agents left because the capacity filled while this poll ran: a swap whose route answered
     * counts again, so the free capacity this poll began with can be gone before it claims.
     */
    let skippedFull = 0;
    capacity.clearFull();
    // Their holders died between settling and advancing: advanced here, not run again.
    await forEachConcurrently(found.stranded, POLL_PARALLELISM, ([agent, settled]) =>
      options.advance(agent, settled),
    );
    await forEachConcurrently(runnable, POLL_PARALLELISM, async (agent) => {
      if (stopping() || running.has(agent.agentId)) return;
      if (agent.status !== "active" || agent.nextRunAt === undefined) return;
      const key = slotKeyOf(agent.agentId, agent.nextRunAt);
      if (dueSlots.endedHere(key)) return;
      if (capacity.free() - claiming <= 0) {
        skippedFull++;
        return;
      }
      // A run that would wait on a full upstream is not started (it would be refused, or hold a
      // slot while it queues): another due run may use the slot.
      const upstream = options.executor.upstreamOf?.(agent);
      if (upstream !== undefined && !capacity.enterUpstream(upstream)) {
        left++;
        return;
      }
      let ran = false;
      tried++;
      claiming++;
      try {
        const lease = await options.claims.claim(agent, agent.nextRunAt, at.nowMs);
        if (lease === undefined) return;
        if (stopping()) {
          await options.runs.release(lease);
          return;
        }
        dueSlots.claimed(key);
        options.startRun(agent, lease, upstream);
        ran = true;
        started++;
      } finally {
        claiming--;
        if (!ran && upstream !== undefined) capacity.leaveUpstream(upstream);
      }
    });
    leftForUpstreams = left;
    // Nothing left in a reused answer: the next poll asks again.
    dueSlots.handled(found, tried + left);
    // More is due than was started: agents left untried, or a full window (more may lie beyond it).
    // Those left for a full upstream are not: a run ending there polls again (see PollingLoop.runEnded).
    // Agents left for want of capacity are, even when none started: the runs that free it poll.
    return (
      (started > 0 || found.reused || skippedFull > 0) &&
      (tried + left < runnable.length || found.due.length >= found.window)
    );
  };
}

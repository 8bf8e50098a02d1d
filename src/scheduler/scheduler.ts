/**
 * The scheduler: runs inside every replica, activates new agents and runs due ones, exactly once
 * per (agent, slot) across replicas. It coordinates only through the stores:
 *
 * - Due agents are found by polling (`status`, `nextRunAt`), one query a poll; several replicas may
 *   see the same one. A replica that finds a slot held by another leaves it alone until that lease
 *   could have run out.
 * - A slot is run under a lease from the RunStore (an insert of a unique claim), renewed while the
 *   run lasts. A replica that crashed or stalled loses its lease after `leaseMs`, and another takes
 *   the slot over; the stalled one can neither renew nor record any more (fencing).
 * - A run's attempts are recorded as they finish; the slot is settled by its success or its last
 *   allowed attempt, once (a unique key). Only then does the agent advance (`lastRunAt`,
 *   `nextRunAt`, failures), through the agent store's versioned update, so pause, resume, delete
 *   and a run never overwrite each other. A crash between settling and advancing is repaired by
 *   the next poll: a due agent whose slot is already settled is advanced without running again
 *   (by the first poll SETTLED_GRACE_MS after the settle: until then its holder is likely
 *   advancing it itself, and a second advance would only race it).
 * - A run waiting on an upstream (a swap's route from the Swap API: Executor.upstreamOf) is out of
 *   the `concurrency` count while it waits, so due transfers run in the slots a slow upstream would
 *   hold idle; at most the upstream's own bound of such runs are in flight, so it refuses none.
 * - Stopping (SIGTERM) stops claiming at once, lets attempts in flight finish within a deadline
 *   (a run waiting to retry makes no new attempt), and only then releases their leases; a run
 *   whose executor is still busy is never released (that is Agenda's double-run bug), its lease
 *   simply expires.
 */
import type { AgentRecord, AgentStore } from "../agent/agent-store.ts";
import type { RunAnnouncer } from "../events/run-announcer.ts";
import type { TimingOf } from "./agent-timing.ts";
import type { CheckClaims } from "./check-claims.ts";
import type { Executor, UpstreamBound } from "./executor.ts";
import type { Lease, RunRecord, RunStore, SlotRef } from "./run-store.ts";
import type { ScheduleClock } from "./schedule-clock.ts";
import { createAdvanceAgent } from "./stages/advance-agent.ts";
import { createAgentSlots } from "./stages/agent-slots.ts";
import { createDuePoll } from "./stages/due-poll.ts";
import { createDueSlots, slotKeyOf } from "./stages/due-slots.ts";
import {
  createPendingActivation,
  type ReadinessCheck,
  type RunnabilityCheck,
} from "./stages/pending-activation.ts";
import { createPollingLoop } from "./stages/polling-loop.ts";
import { createRetryPolicy } from "./stages/retry-policy.ts";
import { createRunCapacity } from "./stages/run-capacity.ts";
import { createRunRecords } from "./stages/run-records.ts";
import { createRunSlot } from "./stages/run-slot.ts";
import { createSlotClaims } from "./stages/slot-claims.ts";

export type { ReadinessCheck, RunnabilityCheck };

/** The agent store as the scheduler uses it: due and pending agents, and lifecycle changes that lose nothing. */
export type ScheduledAgents = Pick<AgentStore, "due" | "pending" | "newestPending" | "update"> &
  /** Reads an agent again for a run about to sign (see ExecutionJournal.stillWanted). */
  Partial<Pick<AgentStore, "get">>;

export interface SchedulerEvents {
  /** One finished attempt, with the schedule lag (run start minus slot) in ms. */
  onRun?(run: RunRecord, lagMs: number, worker: string): void;
  /** A lease taken over from a replica that crashed or stalled. */
  onTakeover?(slot: SlotRef): void;
  /** An agent activated, or failed on activation or after too many failed runs. */
  onStatus?(agent: AgentRecord, status: "active" | "failed", reason?: string): void;
  /** A poll or a run failed for a reason outside the run itself (the database, say). */
  onError?(error: unknown, what: string): void;
  /** A round of pending agents' checks began (at most one a poll). */
  onPendingRound?(): void;
}

export interface SchedulerOptions {
  readonly agents: ScheduledAgents;
  readonly runs: RunStore;
  readonly executor: Executor;
  readonly clock: ScheduleClock;
  /** Kinds whose agents wait for something else than a schedule (see AgentTiming). */
  readonly timingOf?: TimingOf | undefined;
  readonly checkRunnable: RunnabilityCheck;
  /** What a pending agent waits for; absent: nothing, it is activated at once. */
  readonly awaitReady?: ReadinessCheck;
  /** How long an agent may wait (from its creation) before it fails with what it waited for. */
  readonly readyWaitMs?: number;
  /**
   * Claims of pending agents' checks, shared by the replicas, so each check is made once for the
   * fleet; absent: every replica checks every pending agent.
   */
  readonly checkClaims?: CheckClaims;
  /** The pending agents known here changed (learnt or forgotten): see pendingByOwner. */
  readonly onPendingChanged?: () => void;
  /** This replica's name in leases and logs. */
  readonly worker: string;
  /** Slots run at once by this replica. */
  readonly concurrency: number;
  readonly pollIntervalMs: number;
  readonly leaseMs: number;
  /** Bound on one attempt; past it the attempt is aborted and counts as failed. */
  readonly attemptTimeoutMs: number;
  /** Attempts per slot, the first included. */
  readonly maxAttempts: number;
  readonly retryBaseMs: number;
  readonly retryMaxMs: number;
  /** Consecutive failed runs (slots) after which the agent becomes failed. */
  readonly maxConsecutiveFailures: number;
  /** Real time; tests inject their own. */
  readonly now?: () => Date;
  readonly events?: SchedulerEvents;
  /** Tells the event log of each attempt as it starts and once it is recorded. */
  readonly runEvents?: RunAnnouncer;
  readonly random?: () => number;
  /** See REUSE_MS (tests lengthen it, so that what they count does not depend on the machine's speed). */
  readonly reuseMs?: number;
}

export interface Scheduler {
  /**
   * Starts polling: every `pollIntervalMs` while there is nothing more to do, and as soon as half
   * the capacity is free while due work is left.
   */
  start(): void;
  /** One poll: activates pending agents and starts runs for due ones. Tests call it directly. */
  tick(): Promise<void>;
  /** Due work was just made (a trigger order fired): polls now, or right after the poll under way. */
  wake(): void;
  /**
   * Tells of an agent created through this replica: it is checked from the next poll on, without
   * waiting for a look at the store to find it.
   */
  notePending(agent: AgentRecord): void;
  /**
   * Checks these pending agents now, without waiting for the next poll (their token account
   * changed: the approval may have landed). `cause` names the change alike in every replica that
   * hears of it, so the fleet claims one check of it. Agents not known here as pending are ignored.
   */
  checkSoon(agentIds: readonly string[], cause: string): void;
  /** The pending agents known here, one list per owner (what a watch of their accounts follows). */
  pendingByOwner(): Iterable<readonly AgentRecord[]>;
  /** Resolves when no run of this replica is in flight. */
  idle(): Promise<void>;
  /**
   * Stops claiming, lets runs in flight finish for up to `graceMs`, then aborts the rest and
   * releases the leases of those whose executor has returned.
   */
  stop(graceMs: number): Promise<void>;
}

/**
 * The scheduler's stages, wired: finding due slots, claiming them under a lease, the slot journal
 * (within a slot's run), the retry and failure policy, activation of pending agents, and run
 * records; then the poll that takes a slot through them, and the loop that polls.
 */
export function createScheduler(options: SchedulerOptions): Scheduler {
  const { agents, runs, worker, leaseMs, events = {} } = options;
  const now = options.now ?? (() => new Date());
  const onError = (error: unknown, what: string) => events.onError?.(error, what);
  /** How often a holder renews its lease. */
  const renewEveryMs = Math.max(10, Math.floor(leaseMs / 3));
  let stopping = false;
  const isStopping = () => stopping;
  const slots = createAgentSlots({ clock: options.clock, timingOf: options.timingOf });

  const dueSlots = createDueSlots({
    agents,
    leaseMs,
    renewEveryMs,
    reuseMs: options.reuseMs ?? REUSE_MS,
    random: options.random ?? Math.random,
  });
  const policy = createRetryPolicy(options);
  const advance = createAdvanceAgent({
    agents,
    policy,
    slots,
    timingOf: options.timingOf,
    onFailed: (agent, reason) => events.onStatus?.(agent, "failed", reason),
  });
  const claims = createSlotClaims({
    runs,
    worker,
    leaseMs,
    now,
    dueSlots,
    advance,
    onTakeover: (slot) => events.onTakeover?.(slot),
  });
  const records = createRunRecords({
    runs,
    worker,
    onRun: (run, lagMs, by) => events.onRun?.(run, lagMs, by),
    runEvents: options.runEvents,
  });
  const runSlot = createRunSlot({
    ...options,
    policy,
    records,
    slots,
    get: agents.get?.bind(agents),
    advance,
    renewEveryMs,
    stopping: isStopping,
    now,
    onError,
  });
  const activation = createPendingActivation({
    ...options,
    slots,
    stopping: isStopping,
    now,
    onStatus: (agent, status, reason) => events.onStatus?.(agent, status, reason),
    onError,
    onRound: () => events.onPendingRound?.(),
  });

  const capacity = createRunCapacity(options);
  const loop = createPollingLoop({
    ...options,
    capacity,
    stopping: isStopping,
    onError,
    poll: createDuePoll({
      ...options,
      dueSlots,
      claims,
      activation,
      capacity,
      advance,
      startRun,
      reuseMs: options.reuseMs ?? REUSE_MS,
      stopping: isStopping,
      now,
    }),
  });

  /**
   * Starts a run; `upstream` is the one it waits on, with a place already taken on it, held until
   * the upstream has answered it (see RunCapacity.awaitingUpstream) or the run ends.
   */
  function startRun(agent: AgentRecord, lease: Lease, upstream: UpstreamBound | undefined): void {
    const abort = new AbortController();
    const place = { held: upstream !== undefined };
    const awaitingUpstream =
      upstream === undefined
        ? undefined
        : capacity.awaitingUpstream(agent.agentId, upstream, place, loop.runEnded);
    const done = runSlot({ agent, first: lease, abort, awaitingUpstream })
      .catch((error: unknown) => events.onError?.(error, "running a slot"))
      .finally(() => {
        capacity.remove(agent.agentId);
        if (upstream !== undefined && place.held) capacity.leaveUpstream(upstream);
        dueSlots.ended(slotKeyOf(lease.agentId, lease.scheduledAt));
        loop.runEnded(upstream);
      });
    capacity.add(agent.agentId, { done, abort });
  }

  const inFlight = () => Promise.all([...capacity.running.values()].map((r) => r.done));
  return {
    start: () => loop.start(),
    tick: () => loop.tick(),
    wake: () => loop.wake(),
    notePending: (agent) => activation.note(agent),
    checkSoon: (agentIds, cause) => activation.checkSoon(agentIds, cause),
    pendingByOwner: () => activation.byOwner(),
    async idle() {
      await loop.polling();
      while (capacity.running.size > 0) await inFlight();
    },
    async stop(graceMs) {
      stopping = true;
      loop.halt();
      await loop.polling();
      await activation.quiet();
      const all = inFlight();
      let graceTimer: NodeJS.Timeout | undefined;
      const graceOver = new Promise<void>((resolve) => {
        graceTimer = setTimeout(resolve, graceMs);
      });
      await Promise.race([all, graceOver]);
      clearTimeout(graceTimer);
      // Runs still going are told to stop; each releases its lease itself once its executor has
      // returned (never before), or lets it expire if it does not.
      for (const { abort } of capacity.running.values()) abort.abort(new Error("shutting down"));
      await Promise.race([all, new Promise((resolve) => setTimeout(resolve, 1_000))]);
    },
  };
}

/**
 * How long a due answer serves the polls of a backlog, and how often pending agents are looked at
 * while one drains. Polls then come every few finished runs; asking each time would read the agents
 * collection a few times a second, which on FerretDB (no indexes) costs more than the runs.
 */
const REUSE_MS = 1_000;

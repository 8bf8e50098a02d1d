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
import type { AgentPatch, AgentRecord, AgentStore } from "../agent/agent-store.ts";
import type { Schedule } from "../agent/schedule.ts";
import { retryDelayMs } from "../domain/backoff.ts";
import { CLOCK_SKEW_ALLOWANCE_MS } from "../domain/clock-skew.ts";
import type { RunAnnouncer } from "../events/run-announcer.ts";
import { abortableSleep } from "./abortable-sleep.ts";
import { type CheckClaims, checkKeyOf } from "./check-claims.ts";
import {
  type ExecutionJournal,
  type ExecutionResult,
  type Executor,
  executionKeyOf,
  type UpstreamBound,
} from "./executor.ts";
import { createPendingAgents } from "./pending-agents.ts";
import type { Lease, RunRecord, RunStore, SentTransaction, SlotRef } from "./run-store.ts";
import { runIdOf } from "./run-store.ts";
import type { ScheduleClock } from "./schedule-clock.ts";
import { firstSlotAfter, slotBefore as previousSlot } from "./slots.ts";

/** The agent store as the scheduler uses it: due and pending agents, and lifecycle changes that lose nothing. */
export type ScheduledAgents = Pick<AgentStore, "due" | "pending" | "newestPending" | "update"> &
  /** Reads an agent again for a run about to sign (see ExecutionJournal.stillWanted). */
  Partial<Pick<AgentStore, "get">>;

/** Why an agent cannot run; undefined when it can. Checked when a pending agent is activated. */
export type RunnabilityCheck = (agent: AgentRecord) => Promise<string | undefined>;

/**
 * What each of these pending agents still waits for before it may run (its owner's approval, say),
 * in words for its owner; undefined when it waits for nothing. Asked for many agents at once, so
 * that the chain is read in batches. A check that cannot tell (the chain is down) says it still
 * waits: the agent is looked at again later.
 */
export type ReadinessCheck = (agents: readonly AgentRecord[]) => Promise<readonly (string | undefined)[]>;

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

export function createScheduler(options: SchedulerOptions): Scheduler {
  const { agents, runs, executor, clock, worker, events = {} } = options;
  const now = options.now ?? (() => new Date());
  const reuseMs = options.reuseMs ?? REUSE_MS;
  /** Runs in flight, by agent id: one slot of an agent at a time per replica. */
  const running = new Map<string, { done: Promise<void>; abort: AbortController }>();
  /**
   * Runs (by agent) waiting on their upstream (Execution.awaitingUpstream, a swap's route): still
   * in flight, but not counted against `concurrency`, so that a slow Swap API does not hold the
   * slots idle while transfers are due.
   */
  const waiting = new Set<string>();
  /** Runs that count against `concurrency`. */
  const busy = () => running.size - waiting.size;
  /**
   * Runs per upstream they wait on, by its name, from their claim until the upstream has answered
   * them: at most its `calls`, so that the upstream never refuses one for want of room however
   * many wait out of the count. Hence at most `calls` runs on each upstream are before or at it,
   * and `concurrency` others (a swap past its route among them) run at once.
   */
  const onUpstream = new Map<string, number>();
  /** Upstreams the last poll left due agents for, being full; and how many it left. */
  const fullUpstreams = new Map<string, UpstreamBound>();
  let leftForUpstreams = 0;
  /** Pending agents known here, per owner, and when each is checked next. */
  const pendingAgents = createPendingAgents(
    options.onPendingChanged === undefined ? {} : { onChange: options.onPendingChanged },
  );
  /** Agents to check at once (checkSoon), with the cause of each check (its claim's key). */
  const soon = new Map<string, string>();
  let soonPass: Promise<void> | undefined;
  /** The look at the store's pending agents under way, and the last one (see discoverPending). */
  let discovering: Promise<void> | undefined;
  let lastDiscovery: Look | undefined;
  let stopping = false;
  /** start() was called: the polling loop runs. */
  let looping = false;
  let timer: NodeJS.Timeout | undefined;
  let polling: Promise<void> | undefined;
  /** The last poll left due work it had no capacity for. */
  let backlog = false;
  /**
   * The last due answer, with when it was had (real and schedule time): polls that a backlog
   * brings on, a few runs apart, work through it instead of asking again (see REUSE_MS).
   */
  let lastDue: (Look & { agents: readonly AgentRecord[]; window: number }) | undefined;
  /** When pending agents were last looked at. */
  let lastPendingLook: Look | undefined;
  /** How often a holder renews its lease. */
  const renewEveryMs = Math.max(10, Math.floor(options.leaseMs / 3));
  /** Free capacity at which a backlog is polled for again. */
  const wakeAt = Math.max(1, Math.ceil(options.concurrency / 2));
  /**
   * Slots found held by another replica ("agentId@slot ms"): left alone `until` that epoch ms (at
   * the first miss, when a lease taken then would have run out), then claimed again (a take-over,
   * or found settled). A holder that is still there has renewed meanwhile, so after a repeated miss
   * the slot is looked at again every renewal period, and is taken over within one of its expiry.
   */
  const heldElsewhere = new Map<string, { until: number; misses: number }>();
  /**
   * Slots whose run ended here, by the count of runs ended when it did: a poll whose query began
   * before a run ended may still see its agent at that slot, and must not claim it again.
   */
  const endedHere = new Map<string, number>();
  let runsEnded = 0;
  /**
   * Slots found settled less than SETTLED_GRACE_MS after their run finished, while their holder is
   * likely advancing the agent itself: advanced here by a poll after that which still finds the
   * agent at that slot.
   */
  const settledSeen = new Map<string, RunRecord>();

  const scheduleOf = (agent: AgentRecord) => agent.config.schedule as Schedule;

  /** The slot of `agent` before its slot at real instant `slot`, in real time (none before the first). */
  function slotBefore(agent: AgentRecord, slot: Date): Date | undefined {
    const anchor = clock.toSchedule(agent.createdAt);
    const before = previousSlot(anchor, scheduleOf(agent), clock.toSchedule(slot));
    return before === undefined ? undefined : clock.toReal(before);
  }

  /** The first slot of `agent` strictly after real instant `after`, in real time. */
  function nextSlotAfter(agent: AgentRecord, after: Date): Date {
    const anchor = clock.toSchedule(agent.createdAt);
    return clock.toReal(firstSlotAfter(anchor, scheduleOf(agent), clock.toSchedule(after)));
  }

  /** Activates a pending agent (reason undefined), or fails it with `reason`. */
  async function activate(agent: AgentRecord, reason: string | undefined, nowMs: number): Promise<void> {
    const updated = await agents.update(
      agent.owner,
      agent.agentId,
      (current) => {
        if (current.status !== "pending") return undefined;
        if (reason !== undefined) return { status: "failed", nextRunAt: null, failureReason: reason };
        // The first slot is one period after creation, as the agent was told when it was created,
        // and a late activation (a busy database, a replica that died) still runs it. An agent that
        // waited well past it (for its approval) starts at the first slot after now instead of
        // catching up on slots it could never have run.
        const first = nextSlotAfter(current, current.createdAt);
        return {
          status: "active",
          nextRunAt:
            nowMs - first.getTime() <= ACTIVATION_GRACE_MS ? first : nextSlotAfter(current, new Date(nowMs)),
          failureReason: null,
        };
      },
      // The agent as the page found it: usually still current, so the store need not read it again.
      { known: agent },
    );
    // Forgotten once the store has it (gone, activated or failed, here or elsewhere); an update that
    // failed (the database was slow) leaves it known, so its next check, a second later, tries again.
    if (updated?.status !== "pending") pendingAgents.forget(agent.agentId, agent.owner);
    if (updated !== undefined && updated.status !== "pending") {
      events.onStatus?.(updated, reason === undefined ? "active" : "failed", reason);
    }
  }

  /** Moves the agent past a settled slot; harmless when it has moved already. */
  async function advance(agent: AgentRecord, run: RunRecord): Promise<void> {
    const slotMs = run.scheduledAt.getTime();
    let failedNow: string | undefined;
    const updated = await agents.update(
      agent.owner,
      agent.agentId,
      (current) => {
        const atThisSlot = current.status === "active" && current.nextRunAt?.getTime() === slotMs;
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
          failedNow = `${failures} consecutive runs failed, the last with: ${run.error ?? "an error"}`;
          return {
            status: "failed",
            nextRunAt: null,
            lastRunAt: run.finishedAt,
            consecutiveFailures: failures,
            failureReason: failedNow,
          };
        }
        const patch: AgentPatch = { lastRunAt: run.finishedAt, consecutiveFailures: failures };
        // Every slot runs, in order, missed ones included: the next slot after this one.
        return atThisSlot ? { ...patch, nextRunAt: nextSlotAfter(current, run.scheduledAt) } : patch;
      },
      // The agent as the poll found it: usually still current, so the store need not read it again.
      { known: agent },
    );
    if (updated !== undefined && failedNow !== undefined) events.onStatus?.(updated, "failed", failedNow);
  }

  async function runSlot(
    agent: AgentRecord,
    first: Lease,
    abort: AbortController,
    upstream: UpstreamBound | undefined,
    place: { held: boolean },
  ): Promise<void> {
    let lease: Lease | undefined = first;
    let finished = false;
    const slot: SlotRef = first;
    const heartbeat = setInterval(() => {
      const held = lease;
      if (held === undefined) return;
      runs.renew(held, { now: now(), leaseMs: options.leaseMs }).then(
        (renewed) => {
          lease = renewed;
          if (renewed === undefined) abort.abort(new Error("lease lost"));
        },
        (error: unknown) => events.onError?.(error, "renewing a lease"),
      );
    }, renewEveryMs);
    // The slot's journal, always under the newest renewal of the lease. What it holds is known
    // without asking the store when it can be: a first lease (generation 0) is the slot's first
    // holder, so no transaction was kept for the slot but those this run keeps itself; a taker
    // reads the journal once, after its claim, and adds its own (an older holder that keeps one
    // later finds the newer lease and does not send it). A keep whose outcome is unknown (the
    // database failed) makes the next look read the store again.
    let known: SentTransaction[] | undefined = first.generation === 0 ? [] : undefined;
    let today: Promise<readonly RunRecord[]> | undefined;
    const journal: ExecutionJournal = {
      async transactions() {
        known ??= [...(await runs.transactions(slot))];
        return [...known];
      },
      async record(transaction) {
        const held = lease;
        if (held === undefined) return false;
        const at = now();
        let kept: "recorded" | "lease_lost";
        try {
          kept = await runs.recordTransaction(held, transaction, { now: at });
        } catch (error) {
          known = undefined;
          throw error;
        }
        // Kept either way: the insert comes before the lease check.
        if (known !== undefined && !known.some((t) => t.signature === transaction.signature)) {
          known.push({ ...transaction, generation: held.generation, recordedAt: at });
        }
        return kept === "recorded";
      },
      succeededToday() {
        // Every earlier slot settled before the agent came to this one, and lastRunAt is when the
        // last of them finished: before this UTC day began, none of them is on it. Asked once a
        // slot (the day's earlier slots are settled), and handed to its settle (see RunStore).
        const dayStart = new Date(slot.scheduledAt);
        dayStart.setUTCHours(0, 0, 0, 0);
        today ??= (
          (agent.lastRunAt?.getTime() ?? 0) < dayStart.getTime()
            ? Promise.resolve([])
            : runs.succeededToday(slot, slotBefore(agent, slot.scheduledAt))
        ).catch((error: unknown) => {
          today = undefined;
          throw error;
        });
        return today;
      },
      async stillWanted() {
        if (lease === undefined) return false;
        const current =
          options.agents.get === undefined ? agent : await options.agents.get(slot.owner, slot.agentId);
        return lease !== undefined && current !== undefined && current.status === "active";
      },
    };
    /** Waits for `work` out of the count: the upstream has room for it (see onUpstream). */
    const awaitingUpstream = async <T>(work: () => Promise<T>): Promise<T> => {
      if (waiting.has(agent.agentId)) return work();
      waiting.add(agent.agentId);
      // Back for another answer (a swap asking for a smaller route): it takes a place again, even
      // past the room; rare, and a refusal then is an attempt retried.
      if (upstream !== undefined && !place.held) {
        enterUpstream(upstream);
        place.held = true;
      }
      // A slot is free while this run waits: due work may start in it.
      onRunEnded(undefined);
      try {
        return await work();
      } finally {
        waiting.delete(agent.agentId);
        // Answered: the run no longer waits on the upstream, and its place there goes to the next
        // due run (a swap's route is asked for once; its signing and confirmation need none).
        if (upstream !== undefined && place.held) {
          place.held = false;
          leaveUpstream(upstream);
          onRunEnded(upstream);
        }
      }
    };
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
            ...(upstream === undefined ? {} : { awaitingUpstream }),
          })
          .catch((): ExecutionResult => ({ ok: false, error: "the executor failed unexpectedly" }));
        // Lost or stopped mid-attempt: whatever happened is not ours to record.
        if (abort.signal.aborted || lease === undefined) return;
        const finishedAt = now();
        // A failure another attempt cannot mend (no allowance, too little balance) settles at once.
        const settles = outcome.ok || outcome.retryable === false || attempt >= options.maxAttempts;
        const run: RunRecord = {
          runId: runIdOf(slot, attempt),
          agentId: slot.agentId,
          owner: slot.owner,
          scheduledAt: slot.scheduledAt,
          attempt,
          startedAt,
          finishedAt,
          outcome: outcome.ok ? (outcome.skipped === true ? "skipped" : "succeeded") : "failed",
          ...(outcome.ok ? { result: outcome.result } : { error: outcome.error }),
        };
        // The day's earlier successes travel with a settling run, when this slot learned them.
        const dayBefore = settles && today !== undefined ? await today.catch(() => undefined) : undefined;
        const recorded = await runs.record(lease, run, {
          now: finishedAt,
          settles,
          ...(dayBefore === undefined ? {} : { today: dayBefore }),
        });
        if (recorded !== "recorded") return;
        events.onRun?.(run, startedAt.getTime() - slot.scheduledAt.getTime(), worker);
        await options.runEvents?.finished(run);
        if (settles) {
          // A settled slot cannot be claimed again, so its lease needs no release.
          finished = true;
          await advance(agent, run);
          return;
        }
        const delay = retryDelayMs(attempt, {
          baseMs: options.retryBaseMs,
          maxMs: options.retryMaxMs,
          ...(options.random === undefined ? {} : { random: options.random }),
        });
        await abortableSleep(delay, abort.signal);
        // Stopping: no new attempt (it could send a transfer the shutdown deadline then cuts off);
        // the lease is released below, so another replica goes on at once.
        if (stopping) return;
        attempt++;
      }
    } finally {
      clearInterval(heartbeat);
      // Stopped between attempts or after the executor returned: nothing of ours runs any more, so
      // another replica may take the slot at once instead of waiting for the lease to expire.
      if (!finished && stopping && lease !== undefined) {
        await runs.release(lease).catch((error: unknown) => events.onError?.(error, "releasing a lease"));
      }
    }
  }

  /**
   * Starts a run; `upstream` is the one it waits on, with a place already taken in onUpstream,
   * held until the upstream has answered it (see awaitingUpstream) or the run ends.
   */
  function startRun(agent: AgentRecord, lease: Lease, upstream: UpstreamBound | undefined): void {
    const abort = new AbortController();
    const place = { held: upstream !== undefined };
    const done = runSlot(agent, lease, abort, upstream, place)
      .catch((error: unknown) => events.onError?.(error, "running a slot"))
      .finally(() => {
        running.delete(agent.agentId);
        waiting.delete(agent.agentId);
        if (upstream !== undefined && place.held) leaveUpstream(upstream);
        endedHere.set(slotKeyOf(lease.agentId, lease.scheduledAt), runsEnded++);
        onRunEnded(upstream);
      });
    running.set(agent.agentId, { done, abort });
  }

  /**
   * One look at the store's pending agents, in the background (the checks of agents known here do
   * not wait for it): a page of the sweep while one is under way, else the newest ones. A look
   * that took long is not repeated for QUERY_TIME_SHARE times its duration: on a store that reads
   * every agent for it (FerretDB), looks take a tenth of the time at most, and agents created
   * through this replica are known at once anyway (notePending).
   */
  function discoverPending(look: Look): void {
    if (discovering !== undefined) return;
    const last = lastDiscovery;
    if (last !== undefined && look.realMs - last.realMs < last.tookMs * QUERY_TIME_SHARE) return;
    const started = { realMs: look.realMs, nowMs: look.nowMs, tookMs: 0 };
    const sweep = pendingAgents.sweepCursor();
    discovering = (async () => {
      try {
        if (sweep === "idle") pendingAgents.learnNewest(await agents.newestPending(PENDING_PAGE));
        else pendingAgents.learnSweep(await agents.pending(sweep, SWEEP_PAGE), SWEEP_PAGE);
      } catch (error) {
        events.onError?.(error, "looking at pending agents");
      } finally {
        started.tookMs = performance.now() - started.realMs;
        look.tookMs = started.tookMs;
        lastDiscovery = started;
        discovering = undefined;
      }
    })();
  }

  /**
   * Learns of new pending agents (and, a page a poll, of all of them: a sweep), then checks those
   * due for a check: a budget a poll, shared round robin between owners, claimed once for the fleet,
   * and asked of the readiness check together (the chain is read in batches). Those that can run
   * are activated; those that waited past readyWaitMs fail with what they waited for.
   */
  async function activatePending(look: Look): Promise<void> {
    events.onPendingRound?.();
    discoverPending(look);
    // A look that answers soon (always on the memory store) serves this poll's checks; a slow one
    // (FerretDB at thousands of agents) is not waited for.
    const discovered = discovering;
    if (discovered !== undefined) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        discovered,
        new Promise((resolve) => (timer = setTimeout(resolve, DISCOVERY_WAIT_MS))),
      ]);
      clearTimeout(timer);
    }
    const nowMs = now().getTime();
    const due = pendingAgents.due(nowMs, CHECK_BUDGET, CHECK_BUDGET_PER_OWNER);
    for (const { agent, check } of due) pendingAgents.checked(agent.agentId, agent.owner, check);
    await checkPending(
      due.map(({ agent, check }) => ({ agent, key: checkKeyOf(agent.agentId, check) })),
      nowMs,
    );
  }

  /**
   * Checks these pending agents: each check claimed once for the fleet (by its key), the readiness
   * check asked for all of them together (the chain is read in batches). Those that can run are
   * activated; those that waited past readyWaitMs fail with what they waited for.
   */
  async function checkPending(
    toCheck: readonly { agent: AgentRecord; key: string }[],
    nowMs: number,
  ): Promise<void> {
    let due = toCheck;
    if (due.length === 0 || stopping) return;
    if (options.checkClaims !== undefined) {
      const keys = due.map(({ key }) => key);
      const won = await options.checkClaims.claim(keys, new Date(nowMs));
      due = due.filter(({ key }) => won.has(key));
    }
    const reasons = new Map<AgentRecord, string | undefined>();
    await forEachConcurrently(due, POLL_PARALLELISM, async ({ agent }) => {
      reasons.set(agent, await options.checkRunnable(agent));
    });
    const runnable = due.filter(({ agent }) => reasons.get(agent) === undefined).map(({ agent }) => agent);
    const awaited =
      options.awaitReady === undefined || runnable.length === 0 ? [] : await options.awaitReady(runnable);
    const waitsFor = new Map(runnable.map((agent, i) => [agent, awaited[i]]));
    await forEachConcurrently(due, POLL_PARALLELISM, async ({ agent }) => {
      if (stopping) return;
      let reason = reasons.get(agent);
      const waiting = waitsFor.get(agent);
      if (reason === undefined && waiting !== undefined) {
        const waitMs = options.readyWaitMs ?? Number.POSITIVE_INFINITY;
        if (nowMs - agent.createdAt.getTime() < waitMs) return;
        reason = `it was still waiting after ${Math.round(waitMs / 3_600_000)} hours for ${waiting}`;
      }
      await activate(agent, reason, nowMs).catch((error: unknown) =>
        events.onError?.(error, "activating an agent"),
      );
    });
  }

  /**
   * Checks the agents asked for by checkSoon, outside the polls, a budget at a time, one pass at a
   * time (a pass started meanwhile takes what came in since).
   */
  function checkSoonNow(): void {
    if (soonPass !== undefined || stopping) return;
    soonPass = (async () => {
      while (soon.size > 0 && !stopping) {
        const batch: { agent: AgentRecord; key: string }[] = [];
        for (const [agentId, cause] of soon) {
          if (batch.length >= CHECK_BUDGET) break;
          soon.delete(agentId);
          const agent = pendingAgents.find(agentId);
          if (agent !== undefined) batch.push({ agent, key: `${agentId}@${cause}` });
        }
        await checkPending(batch, now().getTime());
      }
    })()
      .catch((error: unknown) => events.onError?.(error, "checking changed pending agents"))
      .finally(() => {
        soonPass = undefined;
        if (soon.size > 0) checkSoonNow();
      });
  }

  /**
   * One poll: a single look at the due agents, a window a few times the free capacity (plus what
   * this replica knows it will skip), tried in random order so that replicas polling the same
   * window spread over it instead of all claiming its head. A slot found held by another replica
   * (its claim's insert failed, its lease runs, it has no settling run yet) is left alone until a
   * lease taken at that moment would have run out. Resolves with whether more due work was left
   * than this poll could start.
   */
  async function poll(): Promise<boolean> {
    if (stopping) return false;
    const nowMs = now().getTime();
    const realMs = performance.now();
    // Within REUSE_MS of the last look, in real and in schedule time (tests move the latter), or
    // longer when the look was slow (see QUERY_TIME_SHARE).
    const recent = (at: Look | undefined) => {
      if (at === undefined) return false;
      const span = Math.max(reuseMs, at.tookMs * QUERY_TIME_SHARE);
      return realMs - at.realMs < span && nowMs - at.nowMs >= 0 && nowMs - at.nowMs < span;
    };
    // Pending agents are paged through beside the due query, at capacity too: activating one
    // starts nothing. While a backlog drains, polls come a few runs apart; pending agents wait
    // 0.5 s or more between checks anyway, so they are looked at once per REUSE_MS then: on a
    // store without indexes (FerretDB) each look reads every agent.
    const lookAtPending = !backlog || !recent(lastPendingLook);
    if (lookAtPending) lastPendingLook = { realMs, nowMs, tookMs: 0 };
    const activation = lookAtPending ? activatePending(lastPendingLook as Look) : Promise.resolve();
    const free = options.concurrency - busy();
    if (free <= 0) {
      await activation;
      // Nothing looked at: what the last poll knew of a backlog still holds. (Saying "none" here
      // made the next poll of a saturated replica ask the store afresh, and look at pending agents,
      // every poll interval: on FerretDB at 10,000 agents most of its CPU.)
      return backlog;
    }
    // A backlog's polls work through the last answer while it is recent: what ran or was claimed
    // since is skipped below (running, endedHere, heldElsewhere), and a stale entry costs one
    // failed claim, as an answer that raced another replica always could.
    const reuse = backlog && lastDue !== undefined && recent(lastDue) ? lastDue : undefined;
    let window: number;
    let due: readonly AgentRecord[];
    if (reuse !== undefined) {
      ({ window, agents: due } = reuse);
      await activation;
    } else {
      // Runs that ended before this query began are in its answer (they advanced their agents).
      // Not so for a reused answer, had before they ended: their marks stay until a fresh one.
      const endedBefore = runsEnded;
      for (const [key, ended] of endedHere) if (ended < endedBefore) endedHere.delete(key);
      window = Math.min(
        MAX_WINDOW,
        free * WINDOW_PER_FREE_RUN + running.size + heldElsewhere.size + settledSeen.size + leftForUpstreams,
      );
      const look: Look = { realMs, nowMs, tookMs: 0 };
      const asked = agents.due(new Date(nowMs), window).then((answer) => {
        look.tookMs = performance.now() - realMs;
        return answer;
      });
      [, due] = await Promise.all([activation, asked]);
      lastDue = { ...look, agents: due, window };
    }
    /** Agents whose slot settled more than SETTLED_GRACE_MS ago, still not advanced. */
    const stranded: [AgentRecord, RunRecord][] = [];
    const runnable: AgentRecord[] = [];
    const stillDue = new Set<string>();
    for (const agent of due) {
      if (running.has(agent.agentId)) continue;
      if (agent.status === "active" && agent.nextRunAt !== undefined) {
        const key = slotKeyOf(agent.agentId, agent.nextRunAt);
        stillDue.add(key);
        const settled = settledSeen.get(key);
        if (settled !== undefined) {
          if (nowMs - settled.finishedAt.getTime() >= SETTLED_GRACE_MS) stranded.push([agent, settled]);
        } else if ((heldElsewhere.get(key)?.until ?? 0) <= nowMs && !endedHere.has(key)) {
          runnable.push(agent);
        }
      }
    }
    // What is no longer due has advanced: forget it (with the window full, only what is old). A
    // reused answer is older than these marks: it cannot tell.
    if (reuse === undefined) {
      for (const key of settledSeen.keys()) if (!stillDue.has(key)) settledSeen.delete(key);
      for (const [key, held] of heldElsewhere) {
        const gone = due.length < window ? !stillDue.has(key) : held.until + options.leaseMs < nowMs;
        if (gone) heldElsewhere.delete(key);
      }
    }
    shuffle(runnable, options.random ?? Math.random);
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
    fullUpstreams.clear();
    // Their holders died between settling and advancing: advanced here, not run again.
    await forEachConcurrently(stranded, POLL_PARALLELISM, ([agent, settled]) => advance(agent, settled));
    // Agents are handled a few at a time: a poll costs a few round trips rather than a few per
    // agent, without flooding the database with every due agent's claims at once.
    await forEachConcurrently(runnable, POLL_PARALLELISM, async (agent) => {
      if (stopping || running.has(agent.agentId)) return;
      if (agent.status !== "active" || agent.nextRunAt === undefined) return;
      const key = slotKeyOf(agent.agentId, agent.nextRunAt);
      if (endedHere.has(key)) return;
      if (busy() + claiming >= options.concurrency) {
        skippedFull++;
        return;
      }
      // A run that would wait on a full upstream is not started (it would be refused, or hold a
      // slot while it queues): another due run may use the slot.
      const upstream = executor.upstreamOf?.(agent);
      if (upstream !== undefined) {
        if ((onUpstream.get(upstream.name) ?? 0) >= upstream.calls) {
          fullUpstreams.set(upstream.name, upstream);
          left++;
          return;
        }
        enterUpstream(upstream);
      }
      let ran = false;
      tried++;
      claiming++;
      try {
        const slot: SlotRef = {
          agentId: agent.agentId,
          owner: agent.owner,
          scheduledAt: agent.nextRunAt as Date,
        };
        const lease = await runs.claim(slot, { worker, now: now(), leaseMs: options.leaseMs });
        if (lease === undefined) {
          // Held by another replica, or settled: then its holder is advancing the agent right now,
          // or a crash came between settling and advancing.
          const settled = await runs.settled(slot);
          if (settled === undefined) {
            const misses = (heldElsewhere.get(key)?.misses ?? 0) + 1;
            const wait = misses === 1 ? options.leaseMs + CLOCK_SKEW_ALLOWANCE_MS : renewEveryMs;
            heldElsewhere.set(key, { until: nowMs + wait, misses });
          } else if (nowMs - settled.finishedAt.getTime() < SETTLED_GRACE_MS) {
            settledSeen.set(key, settled);
          } else {
            await advance(agent, settled);
          }
          return;
        }
        if (lease.generation > 0) events.onTakeover?.(slot);
        if (stopping) {
          await runs.release(lease);
          return;
        }
        heldElsewhere.delete(key);
        startRun(agent, lease, upstream);
        ran = true;
        started++;
      } finally {
        claiming--;
        if (!ran && upstream !== undefined) leaveUpstream(upstream);
      }
    });
    leftForUpstreams = left;
    // Nothing left in a reused answer: the next poll asks again.
    if (reuse !== undefined && tried + left >= runnable.length) lastDue = undefined;
    // More is due than was started: agents left untried, or a full window (more may lie beyond it).
    // Those left for a full upstream are not: a run ending there polls again (see onRunEnded).
    // Agents left for want of capacity are, even when none started: the runs that free it poll.
    return (
      (started > 0 || reuse !== undefined || skippedFull > 0) &&
      (tried + left < runnable.length || due.length >= window)
    );
  }

  function tick(): Promise<void> {
    // One poll at a time: a slow database must not stack polls up.
    polling ??= poll()
      .then(
        (more) => {
          backlog = more;
        },
        (error: unknown) => {
          backlog = false;
          events.onError?.(error, "polling for due agents");
        },
      )
      .finally(() => {
        polling = undefined;
      });
    return polling;
  }

  /**
   * The polling loop: the next poll comes after `pollIntervalMs` when the last one found nothing
   * more than it started, and as soon as half the capacity is free again while due work is left,
   * so that a backlog drains at the speed runs finish, a few runs per poll.
   */
  function schedulePoll(delayMs: number): void {
    clearTimeout(timer);
    timer = setTimeout(() => {
      timer = undefined;
      void tick().then(() => {
        if (stopping || !looping) return;
        if (!backlog) schedulePoll(roomOnFullUpstream() ? 0 : options.pollIntervalMs);
        else if (options.concurrency - busy() >= wakeAt) schedulePoll(0);
        // Otherwise the run that frees enough capacity polls (see startRun); the interval still
        // bounds the wait.
        else schedulePoll(options.pollIntervalMs);
      });
    }, delayMs);
    timer.unref();
  }

  /**
   * A run ended (or left the count to wait on `upstream`'s answer): with due work left, poll now if
   * enough capacity is free; with due runs left for its full upstream, once half of it is free.
   */
  function onRunEnded(upstream: UpstreamBound | undefined): void {
    if (!looping || stopping || polling !== undefined) return;
    const free = options.concurrency - busy();
    if ((backlog && free >= wakeAt) || (upstream !== undefined && roomOnFullUpstream())) schedulePoll(0);
  }

  /**
   * An upstream the last poll left due runs for has half its room free again (and a slot is free
   * to start them in): a poll now starts them.
   */
  function roomOnFullUpstream(): boolean {
    if (busy() >= options.concurrency) return false;
    for (const upstream of fullUpstreams.values()) {
      const room = upstream.calls - (onUpstream.get(upstream.name) ?? 0);
      if (room >= Math.max(1, Math.ceil(upstream.calls / 2))) return true;
    }
    return false;
  }

  /** A run takes a place on `upstream` (see onUpstream). */
  function enterUpstream(upstream: UpstreamBound): void {
    onUpstream.set(upstream.name, (onUpstream.get(upstream.name) ?? 0) + 1);
  }

  /** A run on `upstream` was answered there, ended, or its claim failed: its place there is free. */
  function leaveUpstream(upstream: UpstreamBound): void {
    const left = (onUpstream.get(upstream.name) ?? 1) - 1;
    if (left > 0) onUpstream.set(upstream.name, left);
    else onUpstream.delete(upstream.name);
  }

  return {
    start() {
      if (looping || stopping) return;
      looping = true;
      schedulePoll(0);
    },
    tick,
    notePending: (agent) => pendingAgents.learnNewest([agent]),
    checkSoon(agentIds, cause) {
      if (stopping) return;
      for (const agentId of agentIds) {
        if (soon.size >= MAX_SOON) break;
        soon.set(agentId, cause);
      }
      checkSoonNow();
    },
    pendingByOwner: () => pendingAgents.byOwner(),
    async idle() {
      await polling;
      while (running.size > 0) await Promise.all([...running.values()].map((r) => r.done));
    },
    async stop(graceMs) {
      stopping = true;
      clearTimeout(timer);
      timer = undefined;
      await polling;
      await discovering;
      await soonPass;
      const all = Promise.all([...running.values()].map((r) => r.done));
      let graceTimer: NodeJS.Timeout | undefined;
      const graceOver = new Promise<void>((resolve) => {
        graceTimer = setTimeout(resolve, graceMs);
      });
      await Promise.race([all, graceOver]);
      clearTimeout(graceTimer);
      // Runs still going are told to stop; each releases its lease itself once its executor has
      // returned (never before), or lets it expire if it does not.
      for (const { abort } of running.values()) abort.abort(new Error("shutting down"));
      await Promise.race([all, new Promise((resolve) => setTimeout(resolve, 1_000))]);
    },
  };
}

/** Agents waiting for a checkSoon pass, at most (past it they wait for their poll). */
const MAX_SOON = 100_000;
/** Due agents handled at once by one poll. */
const POLL_PARALLELISM = 8;
/** How late an activation may come and still run the agent's first slot. */
const ACTIVATION_GRACE_MS = 60_000;
/** The newest pending agents read per look (see pending-agents.ts). */
const PENDING_PAGE = 1_000;
/** How long a poll's checks wait for its look at the store's pending agents. */
const DISCOVERY_WAIT_MS = 250;
/** Pending agents read per page of a sweep: on FerretDB a page reads every agent, so pages are large. */
const SWEEP_PAGE = 10_000;
/**
 * Pending agents checked per poll, at most: ten chain requests of 100 token accounts. Shared
 * round robin between owners, so an owner with a backlog takes what the others leave.
 */
const CHECK_BUDGET = 1_000;
/**
 * Checks of one owner's agents per poll, at most: an owner with more pending agents than this has
 * each checked less often (its first check still comes first), and the fleet's claims of checks
 * stay a few hundred writes a poll whatever one owner holds.
 */
const CHECK_BUDGET_PER_OWNER = 100;
/** A poll looks at this many due agents per free run (plus those it will skip), at most MAX_WINDOW. */
const WINDOW_PER_FREE_RUN = 8;
const MAX_WINDOW = 1_000;
/**
 * How long a due answer serves the polls of a backlog, and how often pending agents are looked at
 * while one drains. Polls then come every few finished runs; asking each time would read the agents
 * collection a few times a second, which on FerretDB (no indexes) costs more than the runs.
 */
const REUSE_MS = 1_000;
/**
 * A look that took longer is reused for this many times its own duration, so that while a backlog
 * drains, looks at due and pending agents take at most a tenth of the time, however many agents a
 * store without indexes reads for each (on FerretDB, measured: about 0.1 s at 1,000 agents, 0.5 s
 * at 10,000).
 */
const QUERY_TIME_SHARE = 10;

/** A look at the store's agents: when (real and schedule time), and how long its query took. */
interface Look {
  readonly realMs: number;
  readonly nowMs: number;
  tookMs: number;
}
/**
 * How long after a slot settled its agent is left to the slot's holder to advance (a few writes
 * away, seconds at most on a loaded database) before another replica repairs it.
 */
const SETTLED_GRACE_MS = 5_000;

const slotKeyOf = (agentId: string, slot: Date) => `${agentId}@${slot.getTime()}`;

/** Fisher-Yates, in place. */
function shuffle<T>(items: T[], random: () => number): void {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [items[i], items[j]] = [items[j] as T, items[i] as T];
  }
}

/** Runs `work` on every item, at most `parallelism` at a time. */
async function forEachConcurrently<T>(
  items: readonly T[],
  parallelism: number,
  work: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < items.length) await work(items[next++] as T);
  };
  await Promise.all(Array.from({ length: Math.min(parallelism, items.length) }, lane));
}

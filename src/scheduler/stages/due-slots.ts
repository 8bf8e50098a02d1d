/**
 * Finding due slots: a single look at the due agents a poll, a window a few times the free capacity
 * (plus what this replica knows it will skip), in random order so that replicas polling the same
 * window spread over it instead of all claiming its head.
 *
 * It remembers what a look cannot tell: slots held by another replica, left alone
 * until that lease could have run out; slots whose run ended here, which a look begun before the
 * end may still show; and slots settled so recently that their holder is likely advancing the agent
 * itself. While a backlog drains, polls come a few runs apart and work through the last answer
 * while it is recent (see REUSE_MS in scheduler.ts) instead of asking again.
 */
import type { AgentRecord, AgentStore } from "../../agent/agent-store.ts";
import { CLOCK_SKEW_ALLOWANCE_MS } from "../../domain/clock-skew.ts";
import type { RunRecord } from "../run-store.ts";
import { isRecent, type Look } from "./look.ts";

/** A poll looks at this many due agents per free run (plus those it will skip), at most MAX_WINDOW. */
const WINDOW_PER_FREE_RUN = 8;
const MAX_WINDOW = 1_000;
/**
 * How long after a slot settled its agent is left to the slot's holder to advance (a few writes
 * away, seconds at most on a loaded database) before another replica repairs it.
 */
export const SETTLED_GRACE_MS = 5_000;

export const slotKeyOf = (agentId: string, slot: Date) => `${agentId}@${slot.getTime()}`;

export interface DueSlotsOptions {
  readonly agents: Pick<AgentStore, "due">;
  readonly leaseMs: number;
  /** How often a holder renews its lease: how often a slot held elsewhere is looked at again. */
  readonly renewEveryMs: number;
  /** How long a due answer serves the polls of a backlog (see REUSE_MS in scheduler.ts). */
  readonly reuseMs: number;
  readonly random: () => number;
}

/** What a poll found due. */
export interface DueFinding {
  /** The store's answer (or the reused one), and the window it was asked with. */
  readonly due: readonly AgentRecord[];
  readonly window: number;
  /** The answer is the last poll's, reused. */
  readonly reused: boolean;
  /** Agents whose slot settled more than SETTLED_GRACE_MS ago, still not advanced. */
  readonly stranded: readonly (readonly [AgentRecord, RunRecord])[];
  /** Agents whose slot may be claimed, in random order. */
  readonly runnable: readonly AgentRecord[];
}

export interface DuePoll {
  /** Runs (by agent) in flight here. */
  readonly running: ReadonlyMap<string, unknown>;
  /** Runs the poll may start. */
  readonly free: number;
  /** Agents the last poll left for a full upstream: the window makes room for them again. */
  readonly leftForUpstreams: number;
  /** The last poll left due work: a recent answer may be reused. */
  readonly backlog: boolean;
  /** Work the due query runs beside (activating pending agents), awaited with it. */
  readonly alongside: Promise<void>;
}

export interface DueSlots {
  find(at: Omit<Look, "tookMs">, poll: DuePoll): Promise<DueFinding>;
  /** `handled` agents of `finding` were claimed or left: with all of a reused answer, the next poll asks again. */
  handled(finding: DueFinding, handled: number): void;
  /** The slot's run ended here (see DueSlots). */
  ended(slotKey: string): void;
  /** The slot's run ended here since the last look that tells. */
  endedHere(slotKey: string): boolean;
  /** The slot was found held by another replica at `nowMs`. */
  heldElsewhere(slotKey: string, nowMs: number): void;
  /** The slot was found settled less than SETTLED_GRACE_MS ago. */
  settledRecently(slotKey: string, run: RunRecord): void;
  /** The slot was claimed here. */
  claimed(slotKey: string): void;
}

export function createDueSlots(options: DueSlotsOptions): DueSlots {
  const { leaseMs, reuseMs } = options;
  /**
   * The last due answer, with when it was had (real and schedule time): polls that a backlog
   * brings on, a few runs apart, work through it instead of asking again (see REUSE_MS).
   */
  let lastDue: (Look & { agents: readonly AgentRecord[]; window: number }) | undefined;
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

  /** The store's answer, or a recent one reused while a backlog drains. */
  async function look(at: Omit<Look, "tookMs">, poll: DuePoll) {
    // A backlog's polls work through the last answer while it is recent: what ran or was claimed
    // since is skipped (running, endedHere, heldElsewhere), and a stale entry costs one failed
    // claim, as an answer that raced another replica always could.
    const reuse =
      poll.backlog && lastDue !== undefined && isRecent(lastDue, at, reuseMs) ? lastDue : undefined;
    if (reuse !== undefined) {
      await poll.alongside;
      return { due: reuse.agents, window: reuse.window, reused: true };
    }
    // Runs that ended before this query began are in its answer (they advanced their agents).
    // Not so for a reused answer, had before they ended: their marks stay until a fresh one.
    const endedBefore = runsEnded;
    for (const [key, ended] of endedHere) if (ended < endedBefore) endedHere.delete(key);
    const window = Math.min(
      MAX_WINDOW,
      poll.free * WINDOW_PER_FREE_RUN +
        poll.running.size +
        heldElsewhere.size +
        settledSeen.size +
        poll.leftForUpstreams,
    );
    const asked: Look = { ...at, tookMs: 0 };
    const answer = options.agents.due(new Date(at.nowMs), window).then((agents) => {
      asked.tookMs = performance.now() - at.realMs;
      return agents;
    });
    const [, due] = await Promise.all([poll.alongside, answer]);
    lastDue = { ...asked, agents: due, window };
    return { due, window, reused: false };
  }

  return {
    async find(at, poll) {
      const { due, window, reused } = await look(at, poll);
      const stranded: [AgentRecord, RunRecord][] = [];
      const runnable: AgentRecord[] = [];
      const stillDue = new Set<string>();
      for (const agent of due) {
        if (poll.running.has(agent.agentId)) continue;
        if (agent.status === "active" && agent.nextRunAt !== undefined) {
          const key = slotKeyOf(agent.agentId, agent.nextRunAt);
          stillDue.add(key);
          const settled = settledSeen.get(key);
          if (settled !== undefined) {
            if (at.nowMs - settled.finishedAt.getTime() >= SETTLED_GRACE_MS) stranded.push([agent, settled]);
          } else if ((heldElsewhere.get(key)?.until ?? 0) <= at.nowMs && !endedHere.has(key)) {
            runnable.push(agent);
          }
        }
      }
      // What is no longer due has advanced: forget it (with the window full, only what is old). A
      // reused answer is older than these marks: it cannot tell.
      if (!reused) {
        for (const key of settledSeen.keys()) if (!stillDue.has(key)) settledSeen.delete(key);
        for (const [key, held] of heldElsewhere) {
          const gone = due.length < window ? !stillDue.has(key) : held.until + leaseMs < at.nowMs;
          if (gone) heldElsewhere.delete(key);
        }
      }
      shuffle(runnable, options.random);
      return { due, window, reused, stranded, runnable };
    },
    handled(finding, handled) {
      if (finding.reused && handled >= finding.runnable.length) lastDue = undefined;
    },
    ended(slotKey) {
      endedHere.set(slotKey, runsEnded++);
    },
    endedHere: (slotKey) => endedHere.has(slotKey),
    heldElsewhere(slotKey, nowMs) {
      const misses = (heldElsewhere.get(slotKey)?.misses ?? 0) + 1;
      const wait = misses === 1 ? leaseMs + CLOCK_SKEW_ALLOWANCE_MS : options.renewEveryMs;
      heldElsewhere.set(slotKey, { until: nowMs + wait, misses });
    },
    settledRecently(slotKey, run) {
      settledSeen.set(slotKey, run);
    },
    claimed(slotKey) {
      heldElsewhere.delete(slotKey);
    },
  };
}

/** Fisher-Yates, in place. */
function shuffle<T>(items: T[], random: () => number): void {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [items[i], items[j]] = [items[j] as T, items[i] as T];
  }
}

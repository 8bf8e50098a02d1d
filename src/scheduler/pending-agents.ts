import type { AgentRecord, PendingCursor } from "../agent/agent-store.ts";

/**
 * When a pending agent is checked, as a pure function of its age, so that every replica computes
 * the same checks and can claim each once for the fleet (check-claims.ts): every second for its
 * first minute (an owner usually approves right after creating it), then every minute. Checks are
 * batched (100 token accounts a chain request), so a second's checks of 100 agents cost one read.
 */
export function checkNumberAt(ageMs: number): number {
  if (ageMs < EARLY_SPAN_MS) return Math.max(0, Math.floor(ageMs / EARLY_CHECK_MS));
  return EARLY_CHECKS + Math.floor((ageMs - EARLY_SPAN_MS) / STEADY_CHECK_MS);
}

/** The age at which check `k` is due (the inverse of checkNumberAt). */
export function checkAgeMs(k: number): number {
  if (k <= EARLY_CHECKS) return k * EARLY_CHECK_MS;
  return EARLY_SPAN_MS + (k - EARLY_CHECKS) * STEADY_CHECK_MS;
}

const EARLY_CHECK_MS = 1_000;
const EARLY_SPAN_MS = 60_000;
const EARLY_CHECKS = EARLY_SPAN_MS / EARLY_CHECK_MS;
const STEADY_CHECK_MS = 60_000;

interface Entry {
  agent: AgentRecord;
  /** The last check number looked at here (claimed here or by another replica); -1: none yet. */
  checked: number;
  /** performance.now() when it was last found in the store. */
  seenAt: number;
}

export interface PendingAgents {
  /** How many pending agents are known. */
  readonly size: number;
  /** Takes in the store's newest pending agents: new ones are known from the poll that sees them. */
  learnNewest(page: readonly AgentRecord[]): void;
  /**
   * Where the next page of the sweep starts (the store's pending agents, oldest first), or "idle"
   * when no sweep is under way: one starts every SWEEP_MS (and at once), and reads a page a poll.
   */
  sweepCursor(): PendingCursor | undefined | "idle";
  /**
   * Takes in a page of the sweep. A page shorter than `limit` ends it: agents known since before
   * it began and not seen in it are pending no more (activated or deleted elsewhere): dropped.
   */
  learnSweep(page: readonly AgentRecord[], limit: number): void;
  /**
   * Up to `budget` agents due for a check at `nowMs` (epoch), with the check's number, at most
   * `perOwner` of one owner: one per owner in turn, the owners taken round robin from where the last call stopped, so one owner's
   * backlog delays another owner's checks by one call at most.
   */
  due(nowMs: number, budget: number, perOwner: number): { agent: AgentRecord; check: number }[];
  /** The check was made (here or, its claim lost, by another replica). */
  checked(agentId: string, owner: string, check: number): void;
  /** The agent is no longer pending (activated, failed, deleted): forgotten. */
  forget(agentId: string, owner: string): void;
  /** The pending agent known by that id, if any. */
  find(agentId: string): AgentRecord | undefined;
  /** The agents known, one list per owner. */
  byOwner(): Iterable<readonly AgentRecord[]>;
}

/**
 * The pending agents a replica knows of, per owner, learnt from the store: its newest ones at
 * every poll, and all of them by a sweep every SWEEP_MS, which also drops agents gone from it.
 * Bounded by `maxKept`; agents past it are learnt by a later sweep.
 */
export function createPendingAgents(
  options: {
    maxKept?: number;
    now?: () => number;
    /** Agents were learnt or forgotten (a watch of their accounts follows them). */
    onChange?: () => void;
  } = {},
): PendingAgents {
  const maxKept = options.maxKept ?? MAX_KEPT;
  const now = options.now ?? (() => performance.now());
  const byOwner = new Map<string, Map<string, Entry>>();
  /** Each known agent's owner. */
  const ownerOf = new Map<string, string>();
  const changed = options.onChange ?? (() => {});
  /** Owners in the order they are taken; `next` is where the next `due` starts. */
  let owners: string[] = [];
  let next = 0;
  let size = 0;
  /** Per owner: where its next turn starts among its agents checked before. */
  const rotation = new Map<string, number>();
  /** The sweep under way: where its next page starts, and when it began (performance.now()). */
  let sweep: { cursor: PendingCursor | undefined; startedAt: number } | undefined;
  let nextSweepAt = now();

  const remove = (owner: string, agentId: string) => {
    const agents = byOwner.get(owner);
    if (agents === undefined || !agents.delete(agentId)) return;
    ownerOf.delete(agentId);
    size--;
    changed();
    if (agents.size === 0) {
      byOwner.delete(owner);
      rotation.delete(owner);
      owners = owners.filter((o) => o !== owner);
      if (next >= owners.length) next = 0;
    }
  };
  const learn = (page: readonly AgentRecord[]) => {
    const at = now();
    let added = false;
    for (const agent of page) {
      let agents = byOwner.get(agent.owner);
      const known = agents?.get(agent.agentId);
      if (known !== undefined) {
        known.seenAt = at;
        continue;
      }
      if (size >= maxKept) continue;
      if (agents === undefined) {
        agents = new Map();
        byOwner.set(agent.owner, agents);
        owners.push(agent.owner);
      }
      agents.set(agent.agentId, { agent, checked: -1, seenAt: at });
      ownerOf.set(agent.agentId, agent.owner);
      size++;
      added = true;
    }
    if (added) changed();
  };

  return {
    get size() {
      return size;
    },
    learnNewest: learn,
    sweepCursor() {
      if (sweep === undefined && now() >= nextSweepAt) sweep = { cursor: undefined, startedAt: now() };
      return sweep === undefined ? "idle" : sweep.cursor;
    },
    learnSweep(page, limit) {
      if (sweep === undefined) return;
      learn(page);
      const last = page.at(-1);
      if (page.length === limit && last !== undefined) {
        sweep.cursor = { createdAt: last.createdAt, agentId: last.agentId };
        return;
      }
      const { startedAt } = sweep;
      for (const [owner, agents] of [...byOwner]) {
        for (const [agentId, entry] of [...agents]) if (entry.seenAt < startedAt) remove(owner, agentId);
      }
      sweep = undefined;
      nextSweepAt = now() + SWEEP_MS;
    },
    due(nowMs, budget, perOwner) {
      type Due = { agent: AgentRecord; check: number };
      const lists: Due[][] = [];
      const count = owners.length;
      for (let i = 0; i < count; i++) {
        const owner = owners[(next + i) % count] as string;
        const agents = byOwner.get(owner);
        // Never checked first (an agent just created, likely approved right after), then the
        // others from where this owner's last turn stopped, so a backlog is gone through in turn.
        const fresh: Due[] = [];
        const again: Due[] = [];
        for (const entry of agents?.values() ?? []) {
          const check = checkNumberAt(nowMs - entry.agent.createdAt.getTime());
          if (check <= entry.checked) continue;
          (entry.checked < 0 ? fresh : again).push({ agent: entry.agent, check });
        }
        const from = again.length === 0 ? 0 : (rotation.get(owner) ?? 0) % again.length;
        const list = [...fresh, ...again.slice(from), ...again.slice(0, from)].slice(
          0,
          Math.min(perOwner, budget),
        );
        rotation.set(owner, from + Math.max(0, list.length - fresh.length));
        lists.push(list);
      }
      const out: Due[] = [];
      let lastTaken = -1;
      for (let round = 0; out.length < budget; round++) {
        let any = false;
        for (let i = 0; i < lists.length && out.length < budget; i++) {
          const item = (lists[i] as Due[])[round];
          if (item === undefined) continue;
          out.push(item);
          lastTaken = i;
          any = true;
        }
        if (!any) break;
      }
      // The next call starts with the owner after the last one served, so that when the budget
      // runs out mid-round the owners left out come first next time.
      if (count > 0 && lastTaken >= 0) next = (next + lastTaken + 1) % count;
      return out;
    },
    checked(agentId, owner, check) {
      const entry = byOwner.get(owner)?.get(agentId);
      if (entry !== undefined && entry.checked < check) entry.checked = check;
    },
    forget: (agentId, owner) => remove(owner, agentId),
    find(agentId) {
      const owner = ownerOf.get(agentId);
      return owner === undefined ? undefined : byOwner.get(owner)?.get(agentId)?.agent;
    },
    *byOwner() {
      for (const agents of byOwner.values()) yield [...agents.values()].map((entry) => entry.agent);
    },
  };
}

/** Pending agents remembered per replica; past it, the rest wait for a later sweep. */
const MAX_KEPT = 200_000;
/** How often the whole order of pending agents is read again (and agents gone from it dropped). */
const SWEEP_MS = 60_000;

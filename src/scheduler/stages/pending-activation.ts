/**
 * Activation of pending agents: learns of them (a look at the store's newest ones a poll, a sweep
 * of all of them a page a poll, and those created through this replica at once), checks those due
 * for a check (a budget a poll, shared round robin between owners, each check claimed once for the
 * fleet), and activates those that can run, or fails those that cannot or waited too long.
 */
import type { AgentPatch, AgentRecord, AgentStore } from "../../agent/agent-store.ts";
import { type CheckClaims, checkKeyOf } from "../check-claims.ts";
import { createPendingAgents } from "../pending-agents.ts";
import type { AgentSlots } from "./agent-slots.ts";
import { forEachConcurrently, POLL_PARALLELISM } from "./for-each-concurrently.ts";
import type { Look } from "./look.ts";
import { createPendingDiscovery } from "./pending-discovery.ts";

/** Agents waiting for a checkSoon pass, at most (past it they wait for their poll). */
const MAX_SOON = 100_000;
/** How late an activation may come and still run the agent's first slot. */
const ACTIVATION_GRACE_MS = 60_000;
/** How long a poll's checks wait for its look at the store's pending agents. */
const DISCOVERY_WAIT_MS = 250;
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

/** Why an agent cannot run; undefined when it can. Checked when a pending agent is activated. */
export type RunnabilityCheck = (agent: AgentRecord) => Promise<string | undefined>;

/**
 * What each of these pending agents still waits for before it may run (its owner's approval, say),
 * in words for its owner; undefined when it waits for nothing. Asked for many agents at once, so
 * that the chain is read in batches. A check that cannot tell (the chain is down) says it still
 * waits: the agent is looked at again later.
 */
export type ReadinessCheck = (agents: readonly AgentRecord[]) => Promise<readonly (string | undefined)[]>;

export interface PendingActivationOptions {
  readonly agents: Pick<AgentStore, "pending" | "newestPending" | "update">;
  readonly slots: Pick<AgentSlots, "nextAfter">;
  readonly checkRunnable: RunnabilityCheck;
  /** What a pending agent waits for; absent: nothing, it is activated at once. */
  readonly awaitReady?: ReadinessCheck | undefined;
  /** How long an agent may wait (from its creation) before it fails with what it waited for. */
  readonly readyWaitMs?: number | undefined;
  /** Claims of checks shared by the replicas; absent: every replica checks every pending agent. */
  readonly checkClaims?: CheckClaims | undefined;
  /** The pending agents known here changed (learnt or forgotten). */
  readonly onPendingChanged?: (() => void) | undefined;
  /** The scheduler is stopping: no more checks. */
  readonly stopping: () => boolean;
  readonly now: () => Date;
  /** An agent activated, or failed on activation. */
  readonly onStatus?:
    | ((agent: AgentRecord, status: "active" | "failed", reason?: string) => void)
    | undefined;
  readonly onError?: ((error: unknown, what: string) => void) | undefined;
  /** A round of checks began (at most one a poll). */
  readonly onRound?: (() => void) | undefined;
}

/**
 * How activating `current` changes it (failing it when `reason` is set), at `nowMs`; undefined when
 * it is no longer pending.
 */
export function activationOf(
  current: AgentRecord,
  reason: string | undefined,
  nowMs: number,
  slots: Pick<AgentSlots, "nextAfter">,
): AgentPatch | undefined {
  if (current.status !== "pending") return undefined;
  if (reason !== undefined) return { status: "failed", nextRunAt: null, failureReason: reason };
  // The first slot is one period after creation, as the agent was told when it was created, and a
  // late activation (a busy database, a replica that died) still runs it. An agent that waited
  // well past it (for its approval) starts at the first slot after now instead of catching up on
  // slots it could never have run.
  const first = slots.nextAfter(current, current.createdAt);
  return {
    status: "active",
    nextRunAt:
      nowMs - first.getTime() <= ACTIVATION_GRACE_MS ? first : slots.nextAfter(current, new Date(nowMs)),
    failureReason: null,
  };
}

export interface PendingActivation {
  /** A poll's round: learns of pending agents (see PendingDiscovery), then checks those due for a check. */
  round(look: Look): Promise<void>;
  /** An agent created through this replica: checked from the next round on. */
  note(agent: AgentRecord): void;
  /** Checks these pending agents now, outside the rounds (see Scheduler.checkSoon). */
  checkSoon(agentIds: readonly string[], cause: string): void;
  /** The pending agents known here, one list per owner. */
  byOwner(): Iterable<readonly AgentRecord[]>;
  /** Resolves once the look at the store and the checks under way (outside a round) are over. */
  quiet(): Promise<void>;
}

export function createPendingActivation(options: PendingActivationOptions): PendingActivation {
  const { agents, now, stopping } = options;
  /** Pending agents known here, per owner, and when each is checked next. */
  const pendingAgents = createPendingAgents(
    options.onPendingChanged === undefined ? {} : { onChange: options.onPendingChanged },
  );
  /** Agents to check at once (checkSoon), with the cause of each check (its claim's key). */
  const soon = new Map<string, string>();
  let soonPass: Promise<void> | undefined;
  const discovery = createPendingDiscovery({ agents, pendingAgents, onError: options.onError });

  /** Activates a pending agent (reason undefined), or fails it with `reason`. */
  async function activate(agent: AgentRecord, reason: string | undefined, nowMs: number): Promise<void> {
    const updated = await agents.update(
      agent.owner,
      agent.agentId,
      (current) => activationOf(current, reason, nowMs, options.slots),
      // The agent as the page found it: usually still current, so the store need not read it again.
      { known: agent },
    );
    // Forgotten once the store has it (gone, activated or failed, here or elsewhere); an update that
    // failed (the database was slow) leaves it known, so its next check, a second later, tries again.
    if (updated?.status !== "pending") pendingAgents.forget(agent.agentId, agent.owner);
    if (updated !== undefined && updated.status !== "pending") {
      options.onStatus?.(updated, reason === undefined ? "active" : "failed", reason);
    }
  }

  /**
   * Checks these pending agents: each check claimed once for the fleet (by its key), the readiness
   * check asked for all of them together (the chain is read in batches). Those that can run are
   * activated; those that waited past readyWaitMs fail with what they waited for.
   */
  async function checkAgents(
    toCheck: readonly { agent: AgentRecord; key: string }[],
    nowMs: number,
  ): Promise<void> {
    let due = toCheck;
    if (due.length === 0 || stopping()) return;
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
      if (stopping()) return;
      let reason = reasons.get(agent);
      const waiting = waitsFor.get(agent);
      if (reason === undefined && waiting !== undefined) {
        const waitMs = options.readyWaitMs ?? Number.POSITIVE_INFINITY;
        if (nowMs - agent.createdAt.getTime() < waitMs) return;
        reason = `it was still waiting after ${Math.round(waitMs / 3_600_000)} hours for ${waiting}`;
      }
      await activate(agent, reason, nowMs).catch((error: unknown) =>
        options.onError?.(error, "activating an agent"),
      );
    });
  }

  /**
   * Checks the agents asked for by checkSoon, outside the rounds, a budget at a time, one pass at a
   * time (a pass started meanwhile takes what came in since).
   */
  function checkSoonNow(): void {
    if (soonPass !== undefined || stopping()) return;
    soonPass = (async () => {
      while (soon.size > 0 && !stopping()) {
        const batch: { agent: AgentRecord; key: string }[] = [];
        for (const [agentId, cause] of soon) {
          if (batch.length >= CHECK_BUDGET) break;
          soon.delete(agentId);
          const agent = pendingAgents.find(agentId);
          if (agent !== undefined) batch.push({ agent, key: `${agentId}@${cause}` });
        }
        await checkAgents(batch, now().getTime());
      }
    })()
      .catch((error: unknown) => options.onError?.(error, "checking changed pending agents"))
      .finally(() => {
        soonPass = undefined;
        if (soon.size > 0) checkSoonNow();
      });
  }

  return {
    async round(look) {
      options.onRound?.();
      discovery.discover(look);
      // A look that answers soon (always on the memory store) serves this round's checks; a slow
      // one (FerretDB at thousands of agents) is not waited for.
      const discovered = discovery.underWay();
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
      await checkAgents(
        due.map(({ agent, check }) => ({ agent, key: checkKeyOf(agent.agentId, check) })),
        nowMs,
      );
    },
    note: (agent) => pendingAgents.learnNewest([agent]),
    checkSoon(agentIds, cause) {
      if (stopping()) return;
      for (const agentId of agentIds) {
        if (soon.size >= MAX_SOON) break;
        soon.set(agentId, cause);
      }
      checkSoonNow();
    },
    byOwner: () => pendingAgents.byOwner(),
    async quiet() {
      await discovery.underWay();
      await soonPass;
    },
  };
}

/**
 * A replica's read of the open trigger orders (TRIGGER_REFRESH_MS): the active ones that wait
 * for their price go into its book (those created or resumed through other replicas, those that
 * watch again after a fill was refused), those no longer open leave it, and paused ones whose
 * time ran out expire (an active order's expiry is its own slot's).
 */
import type { AgentRecord, AgentStore } from "../../agent/agent-store.ts";
import type { TriggerBook } from "./trigger-book.ts";
import { firingOf } from "./trigger-firing.ts";
import { legsOf, orderOf } from "./trigger-order.ts";

/** Open orders read per page. */
const REFRESH_PAGE = 500;

export interface TriggerRefreshOptions {
  readonly type: string;
  readonly agents: Pick<AgentStore, "watching" | "update">;
  readonly book: TriggerBook;
  /** The orders in the book: agentId -> owner (what a firing's update needs). */
  readonly owners: Map<string, string>;
  readonly mintOf: (symbol: string) => string | undefined;
  readonly maxWatched: number;
  readonly onError?: ((error: unknown, what: string) => void) | undefined;
}

/** Reads the open orders at `nowMs` and brings the book in line with them. */
export function createTriggerRefresh(options: TriggerRefreshOptions): (nowMs: number) => Promise<void> {
  const { agents, book, owners, type } = options;

  const expire = (agent: AgentRecord, nowMs: number) =>
    agents
      .update(agent.owner, agent.agentId, (current) =>
        current.status === "paused" && new Date(orderOf(current.config).expiresAt).getTime() <= nowMs
          ? { status: "expired", nextRunAt: null }
          : undefined,
      )
      .catch((error: unknown) => options.onError?.(error, "expiring a paused trigger order"));

  /** Takes one open order in; true when it is watched. */
  async function take(agent: AgentRecord, nowMs: number): Promise<boolean> {
    const order = orderOf(agent.config);
    const expired = new Date(order.expiresAt).getTime() <= nowMs;
    if (agent.status === "paused") {
      if (expired) await expire(agent, nowMs);
      return false;
    }
    // Fired and waiting for its run, or past its expiry (its slot is due): nothing to watch.
    if (expired || firingOf(agent.state) !== undefined) return false;
    const mint = options.mintOf(order.triggerToken);
    if (mint === undefined) return false;
    if (!owners.has(agent.agentId)) {
      owners.set(agent.agentId, agent.owner);
      for (const leg of legsOf(agent.agentId, order, mint)) book.add(leg);
    }
    return true;
  }

  return async (nowMs) => {
    const open = new Set<string>();
    let after: string | undefined;
    while (open.size < options.maxWatched) {
      const page = await agents.watching(type, after, Math.min(REFRESH_PAGE, options.maxWatched - open.size));
      for (const agent of page) if (await take(agent, nowMs)) open.add(agent.agentId);
      after = page[page.length - 1]?.agentId;
      if (page.length < REFRESH_PAGE) break;
    }
    for (const agentId of [...owners.keys()]) {
      if (!open.has(agentId)) {
        book.remove(agentId);
        owners.delete(agentId);
      }
    }
  };
}

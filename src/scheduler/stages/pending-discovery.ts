/**
 * Learning of pending agents from the store, in the background (the checks of agents known here do
 * not wait for it): a page of the sweep while one is under way, else the newest ones. A look that
 * took long is not repeated for QUERY_TIME_SHARE times its duration: on a store that reads every
 * agent for it (FerretDB), looks take a tenth of the time at most, and agents created through this
 * replica are known at once anyway (Scheduler.notePending).
 */
import type { AgentStore } from "../../agent/agent-store.ts";
import type { PendingAgents } from "../pending-agents.ts";
import { type Look, QUERY_TIME_SHARE } from "./look.ts";

/** The newest pending agents read per look (see pending-agents.ts). */
const PENDING_PAGE = 1_000;
/** Pending agents read per page of a sweep: on FerretDB a page reads every agent, so pages are large. */
const SWEEP_PAGE = 10_000;

export interface PendingDiscoveryOptions {
  readonly agents: Pick<AgentStore, "pending" | "newestPending">;
  /** Where what is learnt goes. */
  readonly pendingAgents: Pick<PendingAgents, "sweepCursor" | "learnNewest" | "learnSweep">;
  readonly onError?: ((error: unknown, what: string) => void) | undefined;
}

export interface PendingDiscovery {
  /**
   * Starts a look at the store, as of `look` (whose tookMs it sets once done), unless one is under
   * way or the last one was slow and recent.
   */
  discover(look: Look): void;
  /** The look under way, if any. */
  underWay(): Promise<void> | undefined;
}

export function createPendingDiscovery(options: PendingDiscoveryOptions): PendingDiscovery {
  const { agents, pendingAgents } = options;
  /** The look at the store's pending agents under way, and the last one. */
  let discovering: Promise<void> | undefined;
  let lastDiscovery: Look | undefined;
  return {
    discover(look) {
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
          options.onError?.(error, "looking at pending agents");
        } finally {
          started.tookMs = performance.now() - started.realMs;
          look.tookMs = started.tookMs;
          lastDiscovery = started;
          discovering = undefined;
        }
      })();
    },
    underWay: () => discovering,
  };
}

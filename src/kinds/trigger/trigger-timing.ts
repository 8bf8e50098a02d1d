import type { AgentTiming } from "../../scheduler/agent-timing.ts";
import { orderOf } from "./trigger-order.ts";

/**
 * A trigger order waits at its expiry: its one slot there is the expiry's, unless a firing moves
 * it to now first. A settled firing that filled completes the order; the expiry's slot expires
 * it; anything else (a route worse than the worst price, a failed run) clears the firing, and the
 * order watches again until its expiry.
 */
export const triggerTiming: AgentTiming = {
  nextAfter: (agent) => new Date(orderOf(agent.config).expiresAt),
  settled(agent, run) {
    if (run.outcome === "succeeded") return { status: "completed", nextRunAt: null };
    if (run.outcome === "skipped" && run.result?.expired === true) {
      return { status: "expired", nextRunAt: null, state: null };
    }
    return { nextRunAt: new Date(orderOf(agent.config).expiresAt), state: null };
  },
};

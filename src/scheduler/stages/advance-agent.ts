/**
 * Moving an agent past a settled slot, as the retry and failure policy says (RetryPolicy.advance),
 * through the agent store's versioned update, so that pause, resume, delete and a run never
 * overwrite each other. Harmless when the agent has moved already.
 */
import type { AgentRecord, AgentStore } from "../../agent/agent-store.ts";
import type { TimingOf } from "../agent-timing.ts";
import type { RunRecord } from "../run-store.ts";
import type { AgentSlots } from "./agent-slots.ts";
import type { RetryPolicy } from "./retry-policy.ts";

export interface AdvanceAgentOptions {
  readonly agents: Pick<AgentStore, "update">;
  readonly policy: Pick<RetryPolicy, "advance">;
  readonly slots: Pick<AgentSlots, "nextAfter">;
  /** Kinds that move their agents themselves once a slot settled (see AgentTiming). */
  readonly timingOf?: TimingOf | undefined;
  /** The agent failed after too many failed runs. */
  readonly onFailed?: ((agent: AgentRecord, reason: string) => void) | undefined;
}

/** Moves `agent` (as last read) past the slot `run` settled. */
export type AdvanceAgent = (agent: AgentRecord, run: RunRecord) => Promise<void>;

export function createAdvanceAgent(options: AdvanceAgentOptions): AdvanceAgent {
  const { policy, slots } = options;
  return async (agent, run) => {
    let failedNow: string | undefined;
    const updated = await options.agents.update(
      agent.owner,
      agent.agentId,
      (current) => {
        const timing = options.timingOf?.(current.type);
        const moved = policy.advance(
          current,
          run,
          timing === undefined
            ? (at) => ({ nextRunAt: slots.nextAfter(at, run.scheduledAt) })
            : timing.settled,
        );
        if (moved?.failed !== undefined) failedNow = moved.failed;
        return moved?.patch;
      },
      // The agent as the poll found it: usually still current, so the store need not read it again.
      { known: agent },
    );
    if (updated !== undefined && failedNow !== undefined) options.onFailed?.(updated, failedNow);
  };
}

/**
 * When an agent runs, for a kind whose runs are not a schedule of slots: a trigger order waits for
 * its price, not for a clock. Such a kind says where its agents wait (their next slot, the order's
 * expiry) and how a settled slot moves them; everything else (claims, leases, journals, retries)
 * is the scheduler's, as for every slot.
 */
import type { AgentPatch, AgentRecord } from "../agent/agent-store.ts";
import type { RunRecord } from "./run-store.ts";

export interface AgentTiming {
  /** The agent's next slot after real instant `after`: where it waits (a trigger order: its expiry). */
  nextAfter(agent: Pick<AgentRecord, "config" | "createdAt">, after: Date): Date;
  /**
   * How the agent moves once `run` settled its slot, the run of failures aside (the retry policy
   * counts those, and fails the agent after too many): its status and next slot.
   */
  settled(agent: AgentRecord, run: RunRecord): AgentPatch;
}

/** The timing of the kind named `type`, or undefined for a kind that runs on its `schedule`. */
export type TimingOf = (type: string) => AgentTiming | undefined;

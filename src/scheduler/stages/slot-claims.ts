/**
 * Claiming a due slot under a lease from the RunStore (an insert of a unique claim). A claim that
 * fails finds the slot held by another replica (left alone until that lease could have run out),
 * or settled: then its holder is advancing the agent right now, or a crash came between settling
 * and advancing, which this replica repairs once the holder had time enough (SETTLED_GRACE_MS).
 */
import type { AgentRecord } from "../../agent/agent-store.ts";
import type { Lease, RunRecord, RunStore, SlotRef } from "../run-store.ts";
import { type DueSlots, SETTLED_GRACE_MS, slotKeyOf } from "./due-slots.ts";

export interface SlotClaimsOptions {
  readonly runs: Pick<RunStore, "claim" | "settled">;
  /** This replica's name in leases. */
  readonly worker: string;
  readonly leaseMs: number;
  readonly now: () => Date;
  /** Where what a failed claim found is remembered. */
  readonly dueSlots: Pick<DueSlots, "heldElsewhere" | "settledRecently">;
  /** Moves the agent past a settled slot. */
  readonly advance: (agent: AgentRecord, run: RunRecord) => Promise<void>;
  /** A lease taken over from a replica that crashed or stalled. */
  readonly onTakeover?: ((slot: SlotRef) => void) | undefined;
}

export interface SlotClaims {
  /** Claims `agent`'s slot at `scheduledAt` (found due at `nowMs`); undefined when it is not this replica's. */
  claim(agent: AgentRecord, scheduledAt: Date, nowMs: number): Promise<Lease | undefined>;
}

export function createSlotClaims(options: SlotClaimsOptions): SlotClaims {
  const { runs, dueSlots } = options;
  return {
    async claim(agent, scheduledAt, nowMs) {
      const slot: SlotRef = { agentId: agent.agentId, owner: agent.owner, scheduledAt };
      const key = slotKeyOf(agent.agentId, scheduledAt);
      const lease = await runs.claim(slot, {
        worker: options.worker,
        now: options.now(),
        leaseMs: options.leaseMs,
      });
      if (lease === undefined) {
        const settled = await runs.settled(slot);
        if (settled === undefined) dueSlots.heldElsewhere(key, nowMs);
        else if (nowMs - settled.finishedAt.getTime() < SETTLED_GRACE_MS)
          dueSlots.settledRecently(key, settled);
        else await options.advance(agent, settled);
        return undefined;
      }
      if (lease.generation > 0) options.onTakeover?.(slot);
      return lease;
    },
  };
}

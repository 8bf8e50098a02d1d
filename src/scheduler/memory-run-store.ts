/**
 * The in-process RunStore for the embedded default (one process, so no replica races), held to the
 * same contract suite as the MongoDB adapter. It keeps the same generation rules so behaviour
 * matches exactly.
 */
import { CLOCK_SKEW_ALLOWANCE_MS } from "../domain/clock-skew.ts";
import {
  type Lease,
  newestRunFirst,
  type RecordResult,
  type RunRecord,
  type RunStore,
  type SentTransaction,
  type SlotRef,
  utcDayOf,
} from "./run-store.ts";

interface SlotState {
  /** The newest lease generation. */
  lease: Lease;
  attempts: RunRecord[];
  settled?: RunRecord;
  transactions: SentTransaction[];
}

export function createMemoryRunStore(): RunStore {
  const slots = new Map<string, SlotState>();
  /** owner -> agentId -> runs (unsorted). */
  const runs = new Map<string, Map<string, RunRecord[]>>();
  /** `agentId|YYYY-MM-DD` -> that day's settling successes, so caps per day never scan history. */
  const days = new Map<string, RunRecord[]>();
  const keyOf = (slot: SlotRef) => `${slot.agentId}|${slot.scheduledAt.getTime()}`;
  const dayKeyOf = (slot: SlotRef) => `${slot.agentId}|${utcDayOf(slot.scheduledAt)}`;

  const holds = (lease: Lease, now: Date): boolean => {
    const state = slots.get(keyOf(lease));
    return (
      state !== undefined &&
      state.lease.generation === lease.generation &&
      state.lease.worker === lease.worker &&
      now.getTime() < state.lease.leaseUntil.getTime()
    );
  };

  return {
    async claim(slot, { worker, now, leaseMs }) {
      const state = slots.get(keyOf(slot));
      if (state?.settled !== undefined) return undefined;
      if (state !== undefined && now.getTime() < state.lease.leaseUntil.getTime() + CLOCK_SKEW_ALLOWANCE_MS) {
        return undefined;
      }
      const lease: Lease = {
        agentId: slot.agentId,
        owner: slot.owner,
        scheduledAt: new Date(slot.scheduledAt.getTime()),
        generation: state === undefined ? 0 : state.lease.generation + 1,
        worker,
        leaseUntil: new Date(now.getTime() + leaseMs),
      };
      if (state === undefined) slots.set(keyOf(slot), { lease, attempts: [], transactions: [] });
      else state.lease = lease;
      return lease;
    },
    async renew(lease, { now, leaseMs }) {
      if (!holds(lease, now)) return undefined;
      const renewed = { ...lease, leaseUntil: new Date(now.getTime() + leaseMs) };
      const state = slots.get(keyOf(lease));
      if (state !== undefined) state.lease = renewed;
      return renewed;
    },
    async release(lease) {
      const state = slots.get(keyOf(lease));
      if (state !== undefined && state.lease.generation === lease.generation) {
        state.lease = { ...state.lease, leaseUntil: new Date(0) };
      }
    },
    async attempts(slot) {
      const state = slots.get(keyOf(slot));
      return (state?.attempts.length ?? 0) + (state?.settled === undefined ? 0 : 1);
    },
    async settled(slot) {
      const run = slots.get(keyOf(slot))?.settled;
      return run === undefined ? undefined : structuredClone(run);
    },
    async record(lease, run, { now, settles }): Promise<RecordResult> {
      if (!holds(lease, now)) return "lease_lost";
      const state = slots.get(keyOf(lease)) as SlotState;
      if (state.settled !== undefined) return "duplicate";
      if (state.attempts.some((a) => a.attempt === run.attempt)) return "duplicate";
      const copy = structuredClone(run);
      if (settles) state.settled = copy;
      else state.attempts.push(copy);
      if (settles && run.outcome === "succeeded") {
        const day = days.get(dayKeyOf(lease)) ?? [];
        day.push(copy);
        days.set(dayKeyOf(lease), day);
      }
      let byAgent = runs.get(run.owner);
      if (byAgent === undefined) {
        byAgent = new Map();
        runs.set(run.owner, byAgent);
      }
      const list = byAgent.get(run.agentId) ?? [];
      list.push(copy);
      byAgent.set(run.agentId, list);
      return "recorded";
    },
    async list(owner, agentId, { limit, offset }) {
      const all = [...(runs.get(owner)?.get(agentId) ?? [])].sort(newestRunFirst);
      return { runs: all.slice(offset, offset + limit).map((r) => structuredClone(r)), total: all.length };
    },
    async recordTransaction(lease, transaction, { now }) {
      const state = slots.get(keyOf(lease));
      if (state === undefined) return "lease_lost";
      if (!state.transactions.some((t) => t.signature === transaction.signature)) {
        state.transactions.push({ ...transaction, generation: lease.generation, recordedAt: now });
      }
      return holds(lease, now) ? "recorded" : "lease_lost";
    },
    async transactions(slot) {
      return [...(slots.get(keyOf(slot))?.transactions ?? [])];
    },
    async succeededToday(slot) {
      // The store's own index answers; it needs no previous slot.
      return (days.get(dayKeyOf(slot)) ?? [])
        .filter((r) => r.owner === slot.owner && r.scheduledAt.getTime() < slot.scheduledAt.getTime())
        .sort((a, b) => a.scheduledAt.getTime() - b.scheduledAt.getTime())
        .map((r) => structuredClone(r));
    },
    async succeededSince(owner, agentId, since) {
      return (runs.get(owner)?.get(agentId) ?? [])
        .filter((r) => r.outcome === "succeeded" && r.scheduledAt.getTime() >= since.getTime())
        .map((r) => structuredClone(r));
    },
    async close() {},
  };
}

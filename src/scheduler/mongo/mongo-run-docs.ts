/** The run store's documents, their `_id`s, and their conversion to the domain's records. */
import type { JsonObject } from "../../agent/agent-store.ts";
import type { RunOutcome, RunRecord, SlotRef } from "../run-store.ts";

export interface ClaimDoc {
  /** JSON [agentId, slot ms, generation]. */
  _id: string;
  agentId: string;
  owner: string;
  scheduledAt: Date;
  generation: number;
  worker: string;
  leaseUntil: Date;
}

/**
 * A run: JSON [agentId, slot ms, attempt] for a failed attempt; [agentId, slot ms, "settled"] for
 * the settling run. The collection also holds the fences of lease generations (FenceDoc), which
 * carry no run fields, so queries by agent or time see runs only.
 */
export interface RunDoc {
  _id: string;
  runId: string;
  agentId: string;
  owner: string;
  scheduledAt: Date;
  attempt: number;
  startedAt: Date;
  finishedAt: Date;
  outcome: RunOutcome;
  result?: JsonObject;
  error?: string;
  settles: boolean;
  /** A settling run: the agent's successes of its UTC day up to and including it (see succeededToday). */
  today?: Omit<RunDoc, "_id" | "settles" | "today">[];
}

/** JSON [agentId, slot ms, "fence", generation]: generation g may no longer settle the slot, or did. */
export interface FenceDoc {
  _id: string;
  at: Date;
}

export interface TransactionDoc {
  /** JSON [agentId, slot ms, "tx", signature]. */
  _id: string;
  agentId: string;
  owner: string;
  scheduledAt: Date;
  signature: string;
  /** A u64 as a decimal string: BSON has no unsigned 64-bit integer. */
  lastValidBlockHeight: string;
  transaction: string;
  generation: number;
  recordedAt: Date;
}

/** A claim's `_id`: JSON [agentId, slot ms, generation]. */
export const claimId = (slot: SlotRef, generation: number) =>
  JSON.stringify([slot.agentId, slot.scheduledAt.getTime(), generation]);
/** A run's `_id`: JSON [agentId, slot ms, attempt or "settled"]. */
export const runKey = (slot: SlotRef, attempt: number | "settled") =>
  JSON.stringify([slot.agentId, slot.scheduledAt.getTime(), attempt]);
/** A fence's `_id`: JSON [agentId, slot ms, "fence", generation]. */
export const fenceId = (slot: SlotRef, generation: number) =>
  JSON.stringify([slot.agentId, slot.scheduledAt.getTime(), "fence", generation]);

export function fromDoc(doc: RunDoc): RunRecord {
  return {
    runId: doc.runId,
    agentId: doc.agentId,
    owner: doc.owner,
    scheduledAt: doc.scheduledAt,
    attempt: doc.attempt,
    startedAt: doc.startedAt,
    finishedAt: doc.finishedAt,
    outcome: doc.outcome,
    ...(doc.result === undefined ? {} : { result: doc.result }),
    ...(doc.error === undefined ? {} : { error: doc.error }),
  };
}

/** The most successes a settling run keeps for the rest of its day. */
export const MAX_KEPT_TODAY = 100;

/** A run's own fields, as a settling run keeps its day's successes. */
export function runFieldsOf(run: RunRecord | RunDoc): Omit<RunDoc, "_id" | "settles" | "today"> {
  return {
    runId: run.runId,
    agentId: run.agentId,
    owner: run.owner,
    scheduledAt: run.scheduledAt,
    attempt: run.attempt,
    startedAt: run.startedAt,
    finishedAt: run.finishedAt,
    outcome: run.outcome,
    ...(run.result === undefined ? {} : { result: run.result }),
    ...(run.error === undefined ? {} : { error: run.error }),
  };
}

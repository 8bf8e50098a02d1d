/**
 * The run store port: leases on an agent's scheduled slots, and the history of runs. Exactly once
 * rests on it, across any number of replicas, on MongoDB and on FerretDB alike, so every decision
 * that two replicas could race on is an insert of a unique `_id`, never a conditional update
 * (FerretDB's are not atomic):
 *
 * - A claim on (agent, slot) is generation g of that slot's lease, `_id` (agent, slot, g). Of two
 *   replicas that want generation g, one inserts it. A lease that expired (its holder crashed or
 *   stalled) is taken over by inserting g + 1.
 * - A holder that lost its lease (generation g + 1 exists, or its own lease ran out) cannot renew
 *   it and cannot record: `record` checks the generation first.
 * - The settling run of a slot (its success, or its last failed attempt) has `_id` (agent, slot,
 *   "settled"): a slot is settled once and has at most one succeeded run. Earlier failed attempts
 *   are (agent, slot, attempt).
 * - A settle is fenced by the lease without a read: it inserts the fence of its generation g,
 *   (agent, slot, "fence", g), together with the run, and a replica that takes the slot over inserts
 *   the fences of every older generation first. Whichever comes first wins, so a holder that lost
 *   its lease can no longer settle, and a taker finds a slot settled under it.
 *
 * - A settling run carries its agent's successes earlier on its UTC day, so the next slot finds
 *   the day's successes in the run of the slot before it, by key (slots are a pure function of
 *   the schedule), without another write and without a query over the history.
 *
 * Per run, the scheduler's path costs a claim (one insert) and the settle (one insert of two
 * documents) and, for a run that signs a transaction, the kept transaction (an insert and a read)
 * and the day's successes (a read, when the agent ran earlier that day): never a query whose cost
 * grows with the number of agents or runs.
 */
import type { JsonObject } from "../agent/agent-store.ts";

/** One scheduled slot of one agent. */
export interface SlotRef {
  readonly agentId: string;
  readonly owner: string;
  /** The slot, in real time (what the scheduler compares with the clock). */
  readonly scheduledAt: Date;
}

export interface Lease extends SlotRef {
  readonly generation: number;
  readonly worker: string;
  /** The holder may act until then, and must renew before. */
  readonly leaseUntil: Date;
}

/**
 * "skipped": the slot was looked at and deliberately not acted on (a swap quoted outside its
 * price band). It settles the slot like a success, moves nothing, and is no failure.
 */
export type RunOutcome = "succeeded" | "failed" | "skipped";

export interface RunRecord extends SlotRef {
  /** Opaque, unique: the agent, the slot and the attempt. */
  readonly runId: string;
  /** 1 for the first attempt at the slot. */
  readonly attempt: number;
  readonly startedAt: Date;
  readonly finishedAt: Date;
  readonly outcome: RunOutcome;
  /** What the executor reported for a success (or a skip: why, with the figures it saw). */
  readonly result?: JsonObject;
  /** Why the attempt failed, safe to show to the agent's owner. */
  readonly error?: string;
}

export type RecordResult =
  /** Stored. */
  | "recorded"
  /** Not stored: a newer lease generation exists, or the holder's own lease ran out. */
  | "lease_lost"
  /** Not stored: this attempt, or the slot's settling run, was already recorded by someone else. */
  | "duplicate";

/**
 * A transaction an attempt signed and is about to send, kept before it is sent so that any later
 * attempt, on any replica, learns of it first (see the exactly-once rules in sent-transactions.ts).
 */
export interface SentTransaction {
  readonly signature: string;
  /** The last block height it can land at. */
  readonly lastValidBlockHeight: bigint;
  /** The signed transaction as the wire carries it, base64: what a later attempt resends. */
  readonly transaction: string;
  /** The lease generation that signed it. */
  readonly generation: number;
  readonly recordedAt: Date;
}

export interface RunPage {
  /** Newest first: slot descending, then attempt descending. */
  readonly runs: readonly RunRecord[];
  readonly total: number;
}

export interface RunStore {
  /**
   * Takes the lease on a slot for `leaseMs`: a first claim, or a take-over of a lease that expired
   * more than the clock-skew allowance ago. Undefined when the slot is held, settled, or another
   * replica won the race.
   */
  claim(slot: SlotRef, options: { worker: string; now: Date; leaseMs: number }): Promise<Lease | undefined>;
  /**
   * Extends a lease still held. Undefined when it was lost: its time ran out, or a newer
   * generation exists. A holder that gets undefined must stop and record nothing.
   */
  renew(lease: Lease, options: { now: Date; leaseMs: number }): Promise<Lease | undefined>;
  /** Gives a lease up so another replica may claim the slot at once. Only when nothing runs under it. */
  release(lease: Lease): Promise<void>;
  /**
   * Number of attempts recorded for the slot so far (the next one is this + 1), counted by key;
   * asked only when a slot is taken over.
   */
  attempts(slot: SlotRef): Promise<number>;
  /** The slot's settling run, if it has one. */
  settled(slot: SlotRef): Promise<RunRecord | undefined>;
  /**
   * Records a finished attempt under `lease`. `settles`: the slot is done with it (a success, or
   * the last attempt allowed). `today`, with a settling run: what `succeededToday` answered for
   * the slot; the run keeps it (and itself, if it succeeded) for the next slot's `succeededToday`.
   */
  record(
    lease: Lease,
    run: RunRecord,
    options: { now: Date; settles: boolean; today?: readonly RunRecord[] },
  ): Promise<RecordResult>;
  /** One agent's runs, newest first. */
  list(owner: string, agentId: string, page: { limit: number; offset: number }): Promise<RunPage>;
  /**
   * Keeps a transaction signed under `lease` before it is sent: an insert, and only then the check
   * that the lease is still held. "lease_lost": do not send it (a newer holder may not have seen
   * it, and must be the only one to decide what to send).
   */
  recordTransaction(
    lease: Lease,
    transaction: Omit<SentTransaction, "generation" | "recordedAt">,
    options: { now: Date },
  ): Promise<"recorded" | "lease_lost">;
  /**
   * Every transaction kept for the slot, oldest first (generation, then when it was kept). A query
   * by slot; the scheduler asks it only of a slot it took over (a first holder knows it kept none).
   */
  transactions(slot: SlotRef): Promise<readonly SentTransaction[]>;
  /**
   * The agent's succeeded runs whose slot falls on the UTC day of `slot`, before it (caps per
   * day). `previous` is the agent's slot before this one by its schedule: when it is on the same
   * day, its settling run holds the answer, read by key; without one that kept it (the slot did
   * not run, or settled without `today`), the history is queried.
   */
  succeededToday(slot: SlotRef, previous: Date | undefined): Promise<readonly RunRecord[]>;
  /** One agent's succeeded runs whose slot is at or after `since`: a query over its history. */
  succeededSince(owner: string, agentId: string, since: Date): Promise<readonly RunRecord[]>;
  close(): Promise<void>;
}

/** The run id of an attempt: agent, slot (epoch ms) and attempt, URL-safe. */
export function runIdOf(slot: SlotRef, attempt: number): string {
  return `${slot.agentId}.${slot.scheduledAt.getTime().toString(36)}.${attempt}`;
}

/** Newest first: slot descending, then attempt descending. */
export function newestRunFirst(a: RunRecord, b: RunRecord): number {
  return b.scheduledAt.getTime() - a.scheduledAt.getTime() || b.attempt - a.attempt;
}

/** The UTC day of a slot, YYYY-MM-DD: what caps per day count by. */
export function utcDayOf(slot: Date): string {
  return slot.toISOString().slice(0, 10);
}

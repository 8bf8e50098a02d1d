/**
 * The MongoDB RunStore (MongoDB and FerretDB alike): see run-store.ts for the rules. Every
 * decision two replicas can race on is an insert of a unique `_id`; the only update is a holder
 * extending its own lease document, which nobody else writes.
 */

import type { Collection, Db } from "mongodb";
import type { JsonObject } from "../agent/agent-store.ts";
import { isDuplicateKey } from "../agent/mongo-errors.ts";
import { indexedRun } from "../agent/mongo-indexed-run.ts";
import { CLOCK_SKEW_ALLOWANCE_MS } from "../domain/clock-skew.ts";
import type { Lease, RecordResult, RunOutcome, RunRecord, RunStore, SlotRef } from "./run-store.ts";

const WRITE_CONCERN = { w: "majority" } as const;

interface ClaimDoc {
  /** JSON [agentId, slot ms, generation]. */
  _id: string;
  agentId: string;
  owner: string;
  scheduledAt: Date;
  generation: number;
  worker: string;
  leaseUntil: Date;
}

interface RunDoc {
  /** JSON [agentId, slot ms, attempt] for a failed attempt; [agentId, slot ms, "settled"] for the settling run. */
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
}

interface TransactionDoc {
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

export interface MongoRunStoreOptions {
  readonly db: Db;
  /** Prepended to the collection names (`agent_run_claims`, `agent_runs`). */
  readonly collectionPrefix?: string;
  /**
   * Runs one store operation: connects, bounds it in time and maps an unreachable database to the
   * domain's UnavailableError. The agent store's guard, so both stores fail alike.
   */
  readonly guard: <T>(op: () => Promise<T>) => Promise<T>;
  /** Server-side bound on the queries that can scan (history pages, counts). */
  readonly maxTimeMS?: number;
}

export function createMongoRunStore(options: MongoRunStoreOptions): RunStore {
  const { db, guard } = options;
  const bounded = { maxTimeMS: options.maxTimeMS ?? 5_000 };
  const prefix = options.collectionPrefix ?? "";
  const claims: Collection<ClaimDoc> = db.collection(`${prefix}agent_run_claims`, {
    writeConcern: WRITE_CONCERN,
  });
  const runs: Collection<RunDoc> = db.collection(`${prefix}agent_runs`, { writeConcern: WRITE_CONCERN });
  const sent: Collection<TransactionDoc> = db.collection(`${prefix}agent_run_transactions`, {
    writeConcern: WRITE_CONCERN,
  });
  const claimId = (slot: SlotRef, generation: number) =>
    JSON.stringify([slot.agentId, slot.scheduledAt.getTime(), generation]);
  const runKey = (slot: SlotRef, attempt: number | "settled") =>
    JSON.stringify([slot.agentId, slot.scheduledAt.getTime(), attempt]);

  const run = indexedRun(guard, async () => {
    await claims.createIndex({ agentId: 1, scheduledAt: 1, generation: -1 }, { name: "slot_generation" });
    await runs.createIndex(
      { owner: 1, agentId: 1, scheduledAt: -1, attempt: -1 },
      { name: "owner_agent_slot_attempt" },
    );
    await sent.createIndex({ agentId: 1, scheduledAt: 1 }, { name: "agent_slot" });
  });

  /**
   * The newest lease generation of a slot, found by `_id` from generation 0 up: point lookups that
   * every server answers from its `_id` index (a query sorted by generation made FerretDB scan
   * every claim ever made on each claim). A slot has one generation, plus one per take-over.
   */
  async function newestClaim(slot: SlotRef): Promise<ClaimDoc | null> {
    let newest: ClaimDoc | null = null;
    for (let generation = 0; ; generation++) {
      const doc = await claims.findOne({ _id: claimId(slot, generation) });
      if (doc === null) return newest;
      newest = doc;
    }
  }

  /** True while `lease` is the newest generation and its time has not run out. */
  async function holds(lease: Lease, now: Date): Promise<boolean> {
    if (now.getTime() >= lease.leaseUntil.getTime()) return false;
    const newer = await claims.findOne(
      { _id: claimId(lease, lease.generation + 1) },
      { projection: { _id: 1 } },
    );
    return newer === null;
  }

  async function insertOnce<T extends { _id: string }>(collection: Collection<T>, doc: T): Promise<boolean> {
    try {
      // biome-ignore lint/suspicious/noExplicitAny: the driver's OptionalUnlessRequiredId cannot see through T.
      await collection.insertOne(doc as any);
      return true;
    } catch (err) {
      if (isDuplicateKey(err)) return false;
      throw err;
    }
  }

  return {
    claim: (slot, { worker, now, leaseMs }) =>
      run(async () => {
        const latest = await newestClaim(slot);
        if (latest !== null) {
          // Only a slot that was claimed before can be settled or held.
          if (now.getTime() < latest.leaseUntil.getTime() + CLOCK_SKEW_ALLOWANCE_MS) return undefined;
          if ((await runs.findOne({ _id: runKey(slot, "settled") }, { projection: { _id: 1 } })) !== null) {
            return undefined;
          }
        }
        const lease: Lease = {
          agentId: slot.agentId,
          owner: slot.owner,
          scheduledAt: slot.scheduledAt,
          generation: latest === null ? 0 : latest.generation + 1,
          worker,
          leaseUntil: new Date(now.getTime() + leaseMs),
        };
        const won = await insertOnce(claims, { _id: claimId(slot, lease.generation), ...lease });
        return won ? lease : undefined;
      }),
    renew: (lease, { now, leaseMs }) =>
      run(async () => {
        if (!(await holds(lease, now))) return undefined;
        const leaseUntil = new Date(now.getTime() + leaseMs);
        await claims.updateOne({ _id: claimId(lease, lease.generation) }, { $set: { leaseUntil } });
        return { ...lease, leaseUntil };
      }),
    release: (lease) =>
      run(async () => {
        await claims.updateOne(
          { _id: claimId(lease, lease.generation) },
          { $set: { leaseUntil: new Date(0) } },
        );
      }),
    attempts: (slot) =>
      run(() =>
        runs.countDocuments(
          { agentId: slot.agentId, owner: slot.owner, scheduledAt: slot.scheduledAt },
          bounded,
        ),
      ),
    settled: (slot) =>
      run(async () => {
        const doc = await runs.findOne({ _id: runKey(slot, "settled") });
        return doc === null ? undefined : fromDoc(doc);
      }),
    record: (lease, record, { now, settles }) =>
      run(async (): Promise<RecordResult> => {
        if (!(await holds(lease, now))) return "lease_lost";
        const doc: RunDoc = {
          _id: runKey(lease, settles ? "settled" : record.attempt),
          runId: record.runId,
          agentId: lease.agentId,
          owner: lease.owner,
          scheduledAt: lease.scheduledAt,
          attempt: record.attempt,
          startedAt: record.startedAt,
          finishedAt: record.finishedAt,
          outcome: record.outcome,
          settles,
        };
        if (record.result !== undefined) doc.result = record.result;
        if (record.error !== undefined) doc.error = record.error;
        return (await insertOnce(runs, doc)) ? "recorded" : "duplicate";
      }),
    list: (owner, agentId, { limit, offset }) =>
      run(async () => {
        const filter = { owner, agentId };
        const [docs, total] = await Promise.all([
          runs
            .find(filter, bounded)
            .sort({ scheduledAt: -1, attempt: -1 })
            .skip(offset)
            .limit(limit)
            .toArray(),
          runs.countDocuments(filter, bounded),
        ]);
        return { runs: docs.map(fromDoc), total };
      }),
    recordTransaction: (lease, transaction, { now }) =>
      run(async () => {
        // The insert comes first and the fence after it: a holder that took the slot over reads the
        // journal after inserting its own lease, so it either sees this transaction, or this
        // holder sees its lease here and does not send.
        await insertOnce(sent, {
          _id: JSON.stringify([lease.agentId, lease.scheduledAt.getTime(), "tx", transaction.signature]),
          agentId: lease.agentId,
          owner: lease.owner,
          scheduledAt: lease.scheduledAt,
          signature: transaction.signature,
          lastValidBlockHeight: transaction.lastValidBlockHeight.toString(),
          transaction: transaction.transaction,
          generation: lease.generation,
          recordedAt: now,
        });
        return (await holds(lease, now)) ? "recorded" : "lease_lost";
      }),
    transactions: (slot) =>
      run(async () => {
        const docs = await sent
          .find({ agentId: slot.agentId, scheduledAt: slot.scheduledAt }, bounded)
          .sort({ generation: 1, recordedAt: 1 })
          .toArray();
        return docs.map((doc) => ({
          signature: doc.signature,
          lastValidBlockHeight: BigInt(doc.lastValidBlockHeight),
          transaction: doc.transaction,
          generation: doc.generation,
          recordedAt: doc.recordedAt,
        }));
      }),
    succeededSince: (owner, agentId, since) =>
      run(async () => {
        const docs = await runs
          .find({ owner, agentId, outcome: "succeeded", scheduledAt: { $gte: since } }, bounded)
          .toArray();
        return docs.map(fromDoc);
      }),
    async close() {},
  };
}

function fromDoc(doc: RunDoc): RunRecord {
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

/**
 * The MongoDB RunStore (MongoDB and FerretDB alike): see run-store.ts for the rules. Every
 * decision two replicas can race on is an insert of a unique `_id`; the only update is a holder
 * extending its own lease document, which nobody else writes.
 *
 * Reads on the scheduler's path are by `_id`: FerretDB pushes no other filter down (it decodes
 * every document of the collection for any other query), and MongoDB answers them from the `_id`
 * index whatever the collection holds. Queries by field are left to history pages, take-overs and
 * repairs.
 */

import { type Collection, type Db, MongoBulkWriteError, type WriteError } from "mongodb";
import type { JsonObject } from "../agent/agent-store.ts";
import { DUPLICATE_KEY, isDuplicateKey } from "../agent/mongo-errors.ts";
import { indexedRun } from "../agent/mongo-indexed-run.ts";
import { CLOCK_SKEW_ALLOWANCE_MS } from "../domain/clock-skew.ts";
import {
  type Lease,
  type RecordResult,
  type RunOutcome,
  type RunRecord,
  type RunStore,
  type SlotRef,
  utcDayOf,
} from "./run-store.ts";

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

/**
 * A run: JSON [agentId, slot ms, attempt] for a failed attempt; [agentId, slot ms, "settled"] for
 * the settling run. The collection also holds the fences of lease generations (FenceDoc), which
 * carry no run fields, so queries by agent or time see runs only.
 */
interface RunDoc {
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
interface FenceDoc {
  _id: string;
  at: Date;
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
  /** Prepended to the collection names (`agent_run_claims`, `agent_runs`, `agent_run_transactions`). */
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
  const fenceId = (slot: SlotRef, generation: number) =>
    JSON.stringify([slot.agentId, slot.scheduledAt.getTime(), "fence", generation]);

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
   * every claim ever made on each claim). A slot has one generation, plus one per take-over. The
   * walk stops at a generation whose lease still runs at `now`: a later one is inserted only once
   * it has run out, and a superseded holder cannot renew.
   */
  async function newestClaim(slot: SlotRef, now: Date): Promise<ClaimDoc | null> {
    let newest: ClaimDoc | null = null;
    for (let generation = 0; ; generation++) {
      const doc = await claims.findOne({ _id: claimId(slot, generation) });
      if (doc === null) return newest;
      if (now.getTime() < doc.leaseUntil.getTime() + CLOCK_SKEW_ALLOWANCE_MS) return doc;
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

  /** Inserts every document not there yet (in one command); false when one was there already. */
  async function insertAll<T extends { _id: string }>(
    collection: Collection<T>,
    docs: T[],
  ): Promise<boolean> {
    if (docs.length === 0) return true;
    try {
      // biome-ignore lint/suspicious/noExplicitAny: the driver's OptionalUnlessRequiredId cannot see through T.
      await collection.insertMany(docs as any, { ordered: false });
      return true;
    } catch (err) {
      if (err instanceof MongoBulkWriteError && writeErrorsOf(err).every((e) => e.code === DUPLICATE_KEY)) {
        return false;
      }
      throw err;
    }
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
        const leaseOf = (generation: number): Lease => ({
          agentId: slot.agentId,
          owner: slot.owner,
          scheduledAt: slot.scheduledAt,
          generation,
          worker,
          leaseUntil: new Date(now.getTime() + leaseMs),
        });
        // A slot nobody claimed yet (the usual case) is won by one insert. Only a slot that was
        // claimed before can be held, settled or taken over.
        const first = leaseOf(0);
        if (await insertOnce(claims, { _id: claimId(slot, 0), ...first })) return first;
        const latest = await newestClaim(slot, now);
        if (latest === null || now.getTime() < latest.leaseUntil.getTime() + CLOCK_SKEW_ALLOWANCE_MS) {
          return undefined;
        }
        if ((await runs.findOne({ _id: runKey(slot, "settled") }, { projection: { _id: 1 } })) !== null) {
          return undefined;
        }
        const lease = leaseOf(latest.generation + 1);
        if (!(await insertOnce(claims, { _id: claimId(slot, lease.generation), ...lease }))) return undefined;
        // Fence every older generation, so none of them can settle from now on. A fence that is
        // there already was put by a settle racing this take-over: then the slot may be settled.
        const fences = Array.from({ length: lease.generation }, (_, g) => ({
          _id: fenceId(slot, g),
          at: now,
        }));
        const fenced = await insertAll(runs as unknown as Collection<FenceDoc>, fences);
        if (
          !fenced &&
          (await runs.findOne({ _id: runKey(slot, "settled") }, { projection: { _id: 1 } })) !== null
        ) {
          return undefined;
        }
        return lease;
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
      run(async () => {
        // Attempts are recorded in order, each under its own key, and the settling one apart.
        let recorded = 0;
        while (
          (await runs.findOne({ _id: runKey(slot, recorded + 1) }, { projection: { _id: 1 } })) !== null
        ) {
          recorded++;
        }
        const settled = await runs.findOne({ _id: runKey(slot, "settled") }, { projection: { _id: 1 } });
        return recorded + (settled === null ? 0 : 1);
      }),
    settled: (slot) =>
      run(async () => {
        const doc = await runs.findOne({ _id: runKey(slot, "settled") });
        return doc === null ? undefined : fromDoc(doc);
      }),
    record: (lease, record, { now, settles, today }) =>
      run(async (): Promise<RecordResult> => {
        if (now.getTime() >= lease.leaseUntil.getTime()) return "lease_lost";
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
        if (!settles) {
          if (!(await holds(lease, now))) return "lease_lost";
          return (await insertOnce(runs, doc)) ? "recorded" : "duplicate";
        }
        if (today !== undefined) {
          const kept = [
            ...today.map(runFieldsOf),
            ...(record.outcome === "succeeded" ? [runFieldsOf(doc)] : []),
          ];
          // A day of scaled schedule time can hold thousands of slots: past a bound the next slot
          // queries the history instead.
          if (kept.length <= MAX_KEPT_TODAY) doc.today = kept;
        }
        // The fence of this generation and the run, in one ordered insert: a take-over fenced it
        // first (the lease is lost), or the slot was settled already (a duplicate).
        try {
          await runs.insertMany(
            [{ _id: fenceId(lease, lease.generation), at: now } as unknown as RunDoc, doc],
            {
              ordered: true,
            },
          );
          return "recorded";
        } catch (err) {
          const [first] = err instanceof MongoBulkWriteError ? writeErrorsOf(err) : [];
          if (first?.code !== DUPLICATE_KEY) throw err;
          if (first.index > 0) return "duplicate";
          // The fence was there: put by a take-over, or by this generation's own settle.
          const settled = await runs.findOne({ _id: runKey(lease, "settled") }, { projection: { _id: 1 } });
          return settled === null ? "lease_lost" : "duplicate";
        }
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
    succeededToday: (slot, previous) =>
      run(async () => {
        if (previous === undefined || utcDayOf(previous) !== utcDayOf(slot.scheduledAt)) return [];
        const kept = await runs.findOne(
          { _id: runKey({ ...slot, scheduledAt: previous }, "settled") },
          { projection: { owner: 1, today: 1 } },
        );
        if (kept?.today !== undefined && kept.owner === slot.owner) {
          return kept.today.map((r) => fromDoc({ ...r, _id: "", settles: true }));
        }
        // The slot before did not run, or settled without the day: the history tells (a query,
        // but only then).
        const dayStart = new Date(`${utcDayOf(slot.scheduledAt)}T00:00:00.000Z`);
        const docs = await runs
          .find(
            {
              owner: slot.owner,
              agentId: slot.agentId,
              outcome: "succeeded",
              scheduledAt: { $gte: dayStart, $lt: slot.scheduledAt },
            },
            bounded,
          )
          .sort({ scheduledAt: 1 })
          .toArray();
        return docs.map(fromDoc);
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

/** The most successes a settling run keeps for the rest of its day. */
const MAX_KEPT_TODAY = 100;

/** A run's own fields, as a settling run keeps its day's successes. */
function runFieldsOf(run: RunRecord | RunDoc): Omit<RunDoc, "_id" | "settles" | "today"> {
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

/** The write errors of a bulk write, as a list (the driver gives one or several). */
function writeErrorsOf(err: MongoBulkWriteError): readonly WriteError[] {
  const errors = err.writeErrors;
  return Array.isArray(errors) ? errors : [errors as WriteError];
}

/** The run store's run records: attempts, the settling run, and the history read back. */
import { type Collection, MongoBulkWriteError } from "mongodb";
import { DUPLICATE_KEY } from "../../agent/mongo-errors.ts";
import { type Lease, type RecordResult, type RunStore, utcDayOf } from "../run-store.ts";
import { fenceId, fromDoc, MAX_KEPT_TODAY, type RunDoc, runFieldsOf, runKey } from "./mongo-run-docs.ts";
import { insertOnce, writeErrorsOf } from "./mongo-run-inserts.ts";

export interface MongoRunRecordsOptions {
  readonly runs: Collection<RunDoc>;
  /** Server-side bound on the queries that can scan (history pages, counts). */
  readonly bounded: { readonly maxTimeMS: number };
  /** Runs one operation under the store's guard, after its indexes exist. */
  readonly run: <T>(op: () => Promise<T>) => Promise<T>;
  /** True while `lease` is the newest generation and its time has not run out. */
  readonly holds: (lease: Lease, now: Date) => Promise<boolean>;
}

export type MongoRunRecords = Pick<
  RunStore,
  "attempts" | "settled" | "record" | "list" | "succeededToday" | "succeededSince"
>;

export function createMongoRunRecords(options: MongoRunRecordsOptions): MongoRunRecords {
  const { runs, bounded, run, holds } = options;
  return {
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
  };
}

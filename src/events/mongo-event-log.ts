import { type Collection, type Db, MongoBulkWriteError } from "mongodb";
import type { JsonObject } from "../agent/agent-store.ts";
import { DUPLICATE_KEY, isDuplicateKey } from "../agent/mongo-errors.ts";
import type { EventLog, LoggedEvent, NewEvent } from "./event-log.ts";

interface EventDoc {
  /** The event's sequence number. */
  _id: number;
  type: string;
  owner: string;
  agentId: string;
  at: Date;
  key: string;
  data?: JsonObject;
}

/** Bound on append attempts when other writers keep taking the next number. */
const MAX_ROUNDS = 200;
/** Events one insert appends at most. */
const BATCH = 100;
/** How long a process trusts its guess of the next number. */
const GUESS_MS = 60_000;

export interface MongoEventLogOptions {
  readonly db: Db;
  readonly collectionPrefix?: string;
  /** Runs an operation connected, mapping unavailability (the store's guard). */
  readonly guard?: <T>(op: () => Promise<T>) => Promise<T>;
}

/**
 * The event log in MongoDB (and FerretDB), without transactions or atomic counters (FerretDB's
 * conditional updates do not decide races). Only inserts of a unique `_id` decide:
 *
 * - A writer appends event n + 1 only after it has seen event n exist: it read n as the largest
 *   `_id`, or its own insert of n failed as a duplicate (n was taken), or it inserted n itself.
 *   Of writers racing for one number, the unique `_id` lets one insert it; the others read the
 *   largest again and try the next. The sequence is therefore dense, and it becomes visible as a
 *   prefix: once n can be read, so can every number below it. A reader that asks for the events
 *   after its cursor never skips an event that appears later.
 * - `key` is unique too: an event appended again (after a crash, by another replica) is found,
 *   not logged twice.
 * - Each process remembers the number after its last append and tries it first, so a writer
 *   without competition appends with one insert; a stale guess costs one failed insert.
 */
export function createMongoEventLog(options: MongoEventLogOptions): EventLog {
  const guard = options.guard ?? (<T>(op: () => Promise<T>) => op());
  const events: Collection<EventDoc> = options.db.collection<EventDoc>(
    `${options.collectionPrefix ?? ""}agent_events`,
    { writeConcern: { w: "majority" } },
  );
  let indexes: Promise<void> | undefined;
  const ensureIndexes = (): Promise<void> => {
    indexes ??= (async () => {
      await events.createIndex({ key: 1 }, { name: "key_unique", unique: true });
      await events.createIndex({ owner: 1, _id: 1 }, { name: "owner_seq" });
      await events.createIndex({ agentId: 1, _id: 1 }, { name: "agent_seq" });
      await events.createIndex({ at: 1 }, { name: "at" });
    })().catch((err: unknown) => {
      indexes = undefined;
      throw err;
    });
    return indexes;
  };
  /**
   * The number this process tries first: one past its last append, for a minute. Not longer: the
   * numbers after it are taken unless they were pruned, and an old guess could then fill a pruned
   * hole behind the newest event (retention is hours, so a minute-old guess is never behind it).
   */
  let guess: number | undefined;
  let guessedAt = 0;

  const lastSeq = async (): Promise<number> => {
    const [newest] = await events
      .find({}, { projection: { _id: 1 } })
      .sort({ _id: -1 })
      .limit(1)
      .toArray();
    return newest?._id ?? 0;
  };

  /**
   * Appends of this process go in batches, one batch at a time: writers of one process racing for
   * the same number would only fail each other's inserts (n concurrent appends would cost O(n²)
   * inserts), and a batch takes consecutive numbers in one ordered insert, so a busy process
   * appends as fast as the database inserts batches, not single events. Replicas still race each
   * other, a few at a time.
   */
  const waiting: { event: NewEvent; resolve: (e: LoggedEvent) => void; reject: (e: unknown) => void }[] = [];
  let draining = false;
  const drain = async () => {
    if (draining) return;
    draining = true;
    try {
      while (waiting.length > 0) {
        const batch = waiting.splice(0, BATCH);
        try {
          const logged = await guard(() => appendBatch(batch.map((w) => w.event)));
          batch.forEach((w, i) => {
            w.resolve(logged[i] as LoggedEvent);
          });
        } catch (error) {
          for (const w of batch) w.reject(error);
        }
      }
    } finally {
      draining = false;
    }
  };

  /** Appends events in order, each once per key: consecutive numbers, an ordered insert. */
  const appendBatch = async (batch: readonly NewEvent[]): Promise<LoggedEvent[]> => {
    await ensureIndexes();
    const done: LoggedEvent[] = [];
    let rest = [...batch];
    for (let round = 0; round < MAX_ROUNDS && rest.length > 0; round++) {
      const fresh = guess !== undefined && Date.now() - guessedAt < GUESS_MS;
      const first = fresh && guess !== undefined ? guess : (await lastSeq()) + 1;
      const docs = rest.map((event, i) => docOf(first + i, event));
      try {
        await events.insertMany(docs, { ordered: true });
        guess = first + docs.length;
        guessedAt = Date.now();
        return [...done, ...docs.map(loggedOf)];
      } catch (err) {
        const failed = failedIndexOf(err);
        if (failed === undefined) throw err;
        // The ones before the failure are in, in order; the failed one took a number another
        // writer had (try after the largest) or was logged already (its key).
        done.push(...docs.slice(0, failed).map(loggedOf));
        rest = rest.slice(failed);
      }
      guess = undefined;
      const event = rest[0] as NewEvent;
      const logged = await events.findOne({ key: event.key });
      if (logged !== null) {
        done.push(loggedOf(logged));
        rest = rest.slice(1);
      } else if (round > 2) await pause(round);
    }
    if (rest.length > 0) throw new Error("the event log kept moving; gave up appending");
    return done;
  };

  return {
    append: (event) =>
      new Promise<LoggedEvent>((resolve, reject) => {
        waiting.push({ event, resolve, reject });
        void drain();
      }),
    after: (seq, limit, filter) =>
      guard(async () => {
        await ensureIndexes();
        const query: Record<string, unknown> = { _id: { $gt: seq } };
        if (filter?.owner !== undefined) query.owner = filter.owner;
        if (filter?.agentId !== undefined) query.agentId = filter.agentId;
        const docs = await events.find(query).sort({ _id: 1 }).limit(limit).toArray();
        return docs.map(loggedOf);
      }),
    loggedKeys: (keys) =>
      guard(async () => {
        await ensureIndexes();
        const found = await events.find({ key: { $in: [...keys] } }, { projection: { key: 1 } }).toArray();
        return new Set(found.map((doc) => doc.key));
      }),
    firstSeq: () =>
      guard(async () => {
        const [oldest] = await events
          .find({}, { projection: { _id: 1 } })
          .sort({ _id: 1 })
          .limit(1)
          .toArray();
        return oldest?._id;
      }),
    lastSeq: () => guard(lastSeq),
    prune: (before) =>
      guard(async () => {
        await ensureIndexes();
        const last = await lastSeq();
        const result = await events.deleteMany({ at: { $lt: before }, _id: { $lt: last } });
        return result.deletedCount;
      }),
    async close() {},
  };
}

function docOf(seq: number, event: NewEvent): EventDoc {
  return {
    _id: seq,
    type: event.type,
    owner: event.owner,
    agentId: event.agentId,
    at: event.at,
    key: event.key,
    ...(event.data === undefined ? {} : { data: event.data }),
  };
}

/** Where an ordered insert stopped on a duplicate key, or undefined for any other error. */
function failedIndexOf(err: unknown): number | undefined {
  if (err instanceof MongoBulkWriteError) {
    const [first] = Array.isArray(err.writeErrors) ? err.writeErrors : [err.writeErrors];
    return first !== undefined && first.code === DUPLICATE_KEY ? first.index : undefined;
  }
  return isDuplicateKey(err) ? 0 : undefined;
}

function loggedOf(doc: EventDoc): LoggedEvent {
  return {
    seq: doc._id,
    type: doc.type,
    owner: doc.owner,
    agentId: doc.agentId,
    at: doc.at,
    key: doc.key,
    ...(doc.data === undefined ? {} : { data: doc.data }),
  };
}

/** A short, growing, jittered pause: many writers are appending right now. */
function pause(round: number): Promise<void> {
  const ms = Math.min(20, round) * (0.5 + Math.random());
  return new Promise((resolve) => setTimeout(resolve, ms));
}

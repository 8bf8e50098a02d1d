/**
 * The webhook store in MongoDB (and FerretDB): collections `webhook_endpoints`,
 * `webhook_deliveries` (the outbox, and the history ListWebhookDeliveries reads),
 * `webhook_due` (one small entry per pending delivery: when it is due), `webhook_attempt_claims`
 * and `webhook_state` (the fan-out cursor). See webhook-store.ts for the rules: every race between
 * replicas is an insert of a unique `_id`; updates are made by the one holder of a claim, or are
 * idempotent.
 *
 * FerretDB answers a query by `_id` from its primary key and scans the collection for anything
 * else, whatever the indexes: the hot paths are `_id` lookups, and the one query they make (what
 * is due) reads `webhook_due`, which holds the pending deliveries only, not the history.
 */
import type { Collection, Db } from "mongodb";
import { DUPLICATE_KEY, isDuplicateKey } from "../agent/mongo-errors.ts";
import {
  type AttemptClaim,
  claimNextAttempt,
  type DeliveryRecord,
  type DeliveryStatus,
  type EndpointRecord,
  type EndpointSecret,
  type WebhookStore,
} from "./webhook-store.ts";

const WRITE_CONCERN = { w: "majority" } as const;

interface EndpointDoc {
  _id: string;
  owner: string;
  url: string;
  eventTypes: string[];
  description: string;
  createdAt: Date;
  fromSeq: number;
  secrets: EndpointSecret[];
  disabledAt?: Date;
  disabledReason?: string;
  failingSince?: Date;
}

interface DeliveryDoc {
  _id: string;
  endpointId: string;
  owner: string;
  eventSeq: number;
  eventType: string;
  eventAt: Date;
  payload: string;
  createdAt: Date;
  status: DeliveryStatus;
  attempts: number;
  lastResponseCode: number;
  lastError?: string;
  lastAttemptAt?: Date;
  nextAttemptAt?: Date;
  deliveredAt?: Date;
  windowStart: Date;
}

interface ClaimDoc {
  /** JSON [deliveryId, attempt]. */
  _id: string;
  deliveryId: string;
  worker: string;
  at: Date;
  leaseUntil: Date;
}

interface DueDoc {
  /** The delivery's id. */
  _id: string;
  endpointId: string;
  nextAttemptAt: Date;
}

interface StateDoc {
  _id: string;
  seq: number;
}

export interface MongoWebhookStoreOptions {
  readonly db: Db;
  /** The agent store's guard: connects, bounds the operation in time, maps an unreachable database to UnavailableError. */
  readonly guard: <T>(op: () => Promise<T>) => Promise<T>;
  /** Server-side bound on queries that can scan (lists, counts). */
  readonly maxTimeMS?: number;
}

const CURSOR_ID = "fanout_cursor";

export function createMongoWebhookStore(options: MongoWebhookStoreOptions): WebhookStore {
  const { db, guard } = options;
  const bounded = { maxTimeMS: options.maxTimeMS ?? 5_000 };
  const endpoints: Collection<EndpointDoc> = db.collection("webhook_endpoints", {
    writeConcern: WRITE_CONCERN,
  });
  const deliveries: Collection<DeliveryDoc> = db.collection("webhook_deliveries", {
    writeConcern: WRITE_CONCERN,
  });
  const claims: Collection<ClaimDoc> = db.collection("webhook_attempt_claims", {
    writeConcern: WRITE_CONCERN,
  });
  const state: Collection<StateDoc> = db.collection("webhook_state", { writeConcern: WRITE_CONCERN });
  const dues: Collection<DueDoc> = db.collection("webhook_due", { writeConcern: WRITE_CONCERN });

  let indexes: Promise<void> | undefined;
  const ensureIndexes = (): Promise<void> => {
    indexes ??= (async () => {
      await endpoints.createIndex({ owner: 1, createdAt: -1 }, { name: "owner_createdAt" });
      await deliveries.createIndex({ status: 1, nextAttemptAt: 1 }, { name: "status_nextAttemptAt" });
      await deliveries.createIndex(
        { endpointId: 1, createdAt: -1, eventSeq: -1 },
        { name: "endpoint_createdAt_seq" },
      );
      await claims.createIndex({ deliveryId: 1 }, { name: "deliveryId" });
      await dues.createIndex({ nextAttemptAt: 1 }, { name: "nextAttemptAt" });
      await dues.createIndex({ endpointId: 1 }, { name: "endpointId" });
    })().catch((err: unknown) => {
      indexes = undefined;
      throw err;
    });
    return indexes;
  };
  const run = <T>(op: () => Promise<T>): Promise<T> =>
    guard(async () => {
      await ensureIndexes();
      return op();
    });
  /** The pending deliveries of an endpoint are those with a due entry. */
  const cancelPending = async (endpointId: string) => {
    const pending = await dues.find({ endpointId }, { projection: { _id: 1 } }).toArray();
    for (const { _id } of pending) {
      await deliveries.updateOne({ _id }, { $set: { status: "canceled" }, $unset: { nextAttemptAt: "" } });
    }
    await dues.deleteMany({ endpointId });
  };
  const deliveryById = async (id: string) => {
    const doc = await deliveries.findOne({ _id: id });
    return doc === null ? undefined : deliveryOf(doc);
  };
  const claimId = (deliveryId: string, attempt: number) => JSON.stringify([deliveryId, attempt]);

  return {
    createEndpoint: (record, maxPerOwner) =>
      run(async () => {
        // Counted, then inserted: replicas racing on one owner's last free place may both win it,
        // so the cap is exact within a replica and may be passed by a few across replicas.
        const count = await endpoints.countDocuments({ owner: record.owner }, bounded);
        if (count >= maxPerOwner) return "limit";
        await endpoints.insertOne(toEndpointDoc(record));
        return "created";
      }),
    getEndpoint: (owner, endpointId) =>
      run(async () => endpointOf(await endpoints.findOne({ _id: endpointId, owner }))),
    endpointById: (endpointId) => run(async () => endpointOf(await endpoints.findOne({ _id: endpointId }))),
    listEndpoints: (owner, page) =>
      run(async () => {
        const [docs, total] = await Promise.all([
          endpoints
            .find({ owner }, bounded)
            .sort({ createdAt: -1, _id: 1 })
            .skip(page.offset)
            .limit(page.limit)
            .toArray(),
          endpoints.countDocuments({ owner }, bounded),
        ]);
        return { endpoints: docs.map((d) => endpointOf(d) as EndpointRecord), total };
      }),
    deleteEndpoint: (owner, endpointId) =>
      run(async () => {
        const { deletedCount } = await endpoints.deleteOne({ _id: endpointId, owner });
        // Cancelled either way: a delete that failed after removing the endpoint is repaired by
        // the caller's retry, which finds nothing to delete and still cancels.
        await cancelPending(endpointId);
        return deletedCount > 0;
      }),
    setSecrets: (owner, endpointId, secrets) =>
      run(async () => {
        const doc = await endpoints.findOneAndUpdate(
          { _id: endpointId, owner },
          { $set: { secrets: [...secrets] } },
          { returnDocument: "after" },
        );
        return endpointOf(doc);
      }),
    setHealth: (endpointId, health) =>
      run(async () => {
        if (health.kind === "healthy") {
          await endpoints.updateOne({ _id: endpointId }, { $unset: { failingSince: "" } });
        } else if (health.kind === "failing") {
          // The first failure since the last success sets it; later ones leave it.
          await endpoints.updateOne(
            { _id: endpointId, failingSince: { $exists: false } },
            { $set: { failingSince: health.since } },
          );
        } else {
          await endpoints.updateOne(
            { _id: endpointId },
            { $set: { disabledAt: health.at, disabledReason: health.reason } },
          );
          await cancelPending(endpointId);
        }
      }),
    subscribers: (owners) =>
      run(async () => {
        const docs = await endpoints
          .find({ owner: { $in: [...owners] }, disabledAt: { $exists: false } }, bounded)
          .toArray();
        return docs.map((d) => endpointOf(d) as EndpointRecord);
      }),
    enqueue: (records) =>
      run(async () => {
        if (records.length === 0) return [];
        // Due entries first: a crash before the deliveries leaves entries whose delivery the
        // next fan-out of the same events inserts (the cursor has not moved).
        await insertIgnoringDuplicates(
          dues,
          records.map((r) => ({
            _id: r.deliveryId,
            endpointId: r.endpointId,
            nextAttemptAt: r.nextAttemptAt ?? r.createdAt,
          })),
        );
        const inserted = await insertIgnoringDuplicates(deliveries, records.map(toDeliveryDoc));
        return records.filter((r) => inserted.has(r.deliveryId));
      }),
    due: (now, limit) =>
      run(async () => {
        const entries = await dues
          .find({ nextAttemptAt: { $lte: now } }, bounded)
          .sort({ nextAttemptAt: 1 })
          .limit(limit)
          .toArray();
        const found = await Promise.all(entries.map((e) => deliveryById(e._id)));
        // An entry whose delivery is not there yet (a fan-out between its two inserts) waits.
        return found.filter((d): d is DeliveryRecord => d?.status === "pending");
      }),
    claimAttempt: (delivery, claimOptions) =>
      run(() =>
        claimNextAttempt(
          {
            async insertClaim(attempt, claim) {
              try {
                await claims.insertOne({
                  _id: claimId(delivery.deliveryId, attempt),
                  deliveryId: delivery.deliveryId,
                  ...claim,
                });
                return true;
              } catch (err) {
                if (isDuplicateKey(err)) return false;
                throw err;
              }
            },
            async readClaim(attempt): Promise<AttemptClaim | undefined> {
              const doc = await claims.findOne({ _id: claimId(delivery.deliveryId, attempt) });
              return doc === null ? undefined : { leaseUntil: doc.leaseUntil };
            },
            readDelivery: () => deliveryById(delivery.deliveryId),
          },
          delivery,
          claimOptions,
        ),
      ),
    finishAttempt: (deliveryId, attempt, outcome) =>
      run(async () => {
        // Read, then written by `_id` alone (a filter on more would make FerretDB scan): only the
        // holder of the newest attempt writes, so the check cannot race with another writer but a
        // holder that vanished and came back, which the check stops.
        const current = await deliveries.findOne({ _id: deliveryId }, { projection: { attempts: 1 } });
        if (current === null || current.attempts >= attempt) return;
        const unset: Record<string, ""> = {};
        if (outcome.nextAttemptAt === undefined) unset.nextAttemptAt = "";
        if (outcome.lastError === undefined) unset.lastError = "";
        await deliveries.updateOne(
          { _id: deliveryId },
          {
            $set: { ...present(outcome), attempts: attempt },
            ...(Object.keys(unset).length === 0 ? {} : { $unset: unset }),
          },
        );
        if (outcome.status === "pending" && outcome.nextAttemptAt !== undefined) {
          await dues.updateOne({ _id: deliveryId }, { $set: { nextAttemptAt: outcome.nextAttemptAt } });
        } else {
          await dues.deleteOne({ _id: deliveryId });
        }
      }),
    getDelivery: (owner, endpointId, deliveryId) =>
      run(async () => {
        const found = await deliveryById(deliveryId);
        return found?.owner === owner && found.endpointId === endpointId ? found : undefined;
      }),
    listDeliveries: (owner, endpointId, filter) =>
      run(async () => {
        const query = {
          endpointId,
          owner,
          ...(filter.status === undefined ? {} : { status: filter.status }),
        };
        const [docs, total] = await Promise.all([
          deliveries
            .find(query, bounded)
            .sort({ createdAt: -1, eventSeq: -1 })
            .skip(filter.offset)
            .limit(filter.limit)
            .toArray(),
          deliveries.countDocuments(query, bounded),
        ]);
        return { deliveries: docs.map(deliveryOf), total };
      }),
    resend: (owner, endpointId, deliveryId, now) =>
      run(async () => {
        const found = await deliveryById(deliveryId);
        if (found?.owner !== owner || found.endpointId !== endpointId) return undefined;
        await deliveries.updateOne(
          { _id: deliveryId },
          { $set: { status: "pending", nextAttemptAt: now, windowStart: now } },
        );
        await dues.updateOne(
          { _id: deliveryId },
          { $set: { endpointId, nextAttemptAt: now } },
          { upsert: true },
        );
        return { ...found, status: "pending" as const, nextAttemptAt: now, windowStart: now };
      }),
    cursor: () =>
      run(async () => {
        const doc = await state.findOne({ _id: CURSOR_ID });
        return doc?.seq;
      }),
    advanceCursor: (seq) =>
      run(async () => {
        try {
          await state.updateOne({ _id: CURSOR_ID }, { $max: { seq } }, { upsert: true });
        } catch (err) {
          // Two replicas upserted the first cursor at once: the document exists now.
          if (!isDuplicateKey(err)) throw err;
          await state.updateOne({ _id: CURSOR_ID }, { $max: { seq } });
        }
      }),
    prune: (before) =>
      run(async () => {
        const old = await deliveries
          .find(
            { status: { $ne: "pending" }, createdAt: { $lt: before } },
            { ...bounded, projection: { _id: 1 } },
          )
          .limit(PRUNE_BATCH)
          .toArray();
        if (old.length === 0) return 0;
        const ids = old.map((d) => d._id);
        await claims.deleteMany({ deliveryId: { $in: ids } });
        const { deletedCount } = await deliveries.deleteMany({ _id: { $in: ids } });
        return deletedCount;
      }),
    async close() {},
  };
}

/** Inserts documents, passing over those whose `_id` exists: the ids of those inserted. */
async function insertIgnoringDuplicates<T extends { _id: string }>(
  collection: Collection<T>,
  docs: readonly T[],
): Promise<Set<string>> {
  const ids = docs.map((d) => d._id);
  try {
    // biome-ignore lint/suspicious/noExplicitAny: the driver's OptionalUnlessRequiredId cannot see through T.
    await collection.insertMany(docs as any[], { ordered: false });
    return new Set(ids);
  } catch (err) {
    const writeErrors = (err as { writeErrors?: unknown }).writeErrors;
    const errors = (
      Array.isArray(writeErrors) ? writeErrors : writeErrors === undefined ? [] : [writeErrors]
    ) as {
      code?: number;
      index?: number;
    }[];
    if (errors.length === 0 || errors.some((e) => e.code !== DUPLICATE_KEY)) throw err;
    const failed = new Set(errors.map((e) => e.index));
    return new Set(ids.filter((_, i) => !failed.has(i)));
  }
}

/** Deliveries dropped per prune; the next prune takes the rest. */
const PRUNE_BATCH = 1000;

/** The fields that have a value: the driver would store undefined as null. */
function present<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(
    Object.entries(value).filter(([, v]) => v !== undefined && v !== null),
  ) as Partial<T>;
}

function toEndpointDoc(record: EndpointRecord): EndpointDoc {
  const { endpointId, eventTypes, secrets, ...rest } = record;
  return {
    _id: endpointId,
    ...(present(rest) as Omit<EndpointDoc, "_id" | "eventTypes" | "secrets">),
    eventTypes: [...eventTypes],
    secrets: secrets.map((s) => present(s) as EndpointSecret),
  };
}

function endpointOf(doc: EndpointDoc | null): EndpointRecord | undefined {
  if (doc === null) return undefined;
  const { _id, ...rest } = doc;
  return {
    endpointId: _id,
    ...(present(rest) as Omit<EndpointRecord, "endpointId">),
    secrets: doc.secrets.map((s) => ({
      secret: s.secret,
      createdAt: s.createdAt,
      ...(s.expiresAt == null ? {} : { expiresAt: s.expiresAt }),
    })),
  };
}

function toDeliveryDoc(record: DeliveryRecord): DeliveryDoc {
  const { deliveryId, ...rest } = record;
  return { _id: deliveryId, ...(present(rest) as Omit<DeliveryDoc, "_id">) };
}

function deliveryOf(doc: DeliveryDoc): DeliveryRecord {
  const { _id, ...rest } = doc;
  return { deliveryId: _id, ...(present(rest) as Omit<DeliveryRecord, "deliveryId">) };
}

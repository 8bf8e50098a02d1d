/**
 * The webhook store in MongoDB (and FerretDB): collections `webhook_endpoints`,
 * `webhook_outbox` (the pending deliveries), `webhook_deliveries` (the finished ones: delivered,
 * failed or canceled), `webhook_attempt_claims` and `webhook_state` (the fan-out cursor). See
 * webhook-store.ts for the rules: every race between replicas is an insert of a unique `_id`;
 * updates are made by the one holder of a claim, or are idempotent.
 *
 * FerretDB answers a query by `_id` from its primary key, but scans the collection for every other
 * query and for every update and delete, whatever the indexes. So the outbox holds only what is
 * pending, and a delivery that ends moves to the history by an insert (cheap at any size); its
 * outbox document goes in batches, one delete for many. Where a delivery is in both (the batch
 * not yet flushed, a process gone before it), the history wins. On MongoDB the indexes serve it all.
 */
import type { Collection, Db } from "mongodb";
import { DUPLICATE_KEY, isDuplicateKey } from "../agent/mongo-errors.ts";
import { indexedRun } from "../agent/mongo-indexed-run.ts";
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
/** How long a resent delivery's outbox copy waits while its history copy is deleted (see resend). */
const RESEND_HOLD_MS = 60_000;

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
  const outbox: Collection<DeliveryDoc> = db.collection("webhook_outbox", { writeConcern: WRITE_CONCERN });
  const history: Collection<DeliveryDoc> = db.collection("webhook_deliveries", {
    writeConcern: WRITE_CONCERN,
  });
  const claims: Collection<ClaimDoc> = db.collection("webhook_attempt_claims", {
    writeConcern: WRITE_CONCERN,
  });
  const state: Collection<StateDoc> = db.collection("webhook_state", { writeConcern: WRITE_CONCERN });

  const run = indexedRun(guard, async () => {
    await endpoints.createIndex({ owner: 1, createdAt: -1 }, { name: "owner_createdAt" });
    await outbox.createIndex({ nextAttemptAt: 1 }, { name: "nextAttemptAt" });
    await outbox.createIndex(
      { endpointId: 1, createdAt: -1, eventSeq: -1 },
      { name: "endpoint_createdAt_seq" },
    );
    await history.createIndex(
      { endpointId: 1, createdAt: -1, eventSeq: -1 },
      { name: "endpoint_createdAt_seq" },
    );
    await history.createIndex({ createdAt: 1 }, { name: "createdAt" });
    await claims.createIndex({ deliveryId: 1 }, { name: "deliveryId" });
  });
  /** Outbox documents of deliveries that moved to the history, deleted in one go. */
  const moved = new Set<string>();
  const flushMoved = async () => {
    if (moved.size === 0) return;
    const ids = [...moved];
    moved.clear();
    try {
      await outbox.deleteMany({ _id: { $in: ids } });
    } catch (err) {
      for (const id of ids) moved.add(id);
      throw err;
    }
  };
  /** Ends a delivery: into the history (once), out of the outbox (in the next batch). */
  const settle = async (doc: DeliveryDoc) => {
    await insertIgnoringDuplicates(history, [doc]);
    moved.add(doc._id);
  };
  /** A delivery as callers see it: the history wins over a leftover outbox copy. */
  const deliveryById = async (id: string): Promise<DeliveryRecord | undefined> => {
    const doc = (await history.findOne({ _id: id })) ?? (await outbox.findOne({ _id: id }));
    return doc === null ? undefined : deliveryOf(doc);
  };
  /**
   * A pending delivery, for attempts: the outbox alone, as the history is large and FerretDB
   * would scan it. An outbox copy left by a process that died between moving a delivery to the
   * history and deleting the copy can be attempted once more: at least once, as promised.
   */
  const pendingById = async (id: string): Promise<DeliveryRecord | undefined> => {
    if (moved.has(id)) return undefined;
    const doc = await outbox.findOne({ _id: id });
    return doc === null ? undefined : deliveryOf(doc);
  };
  const cancelPending = async (endpointId: string) => {
    const pending = await outbox.find({ endpointId }).toArray();
    for (const doc of pending) {
      const { nextAttemptAt: _, ...rest } = doc;
      await settle({ ...rest, status: "canceled" });
    }
    await flushMoved();
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
    earliestSubscription: () =>
      run(async () => {
        const [earliest] = await endpoints
          .find({ disabledAt: { $exists: false } }, { ...bounded, projection: { fromSeq: 1 } })
          .sort({ fromSeq: 1 })
          .limit(1)
          .toArray();
        return earliest?.fromSeq;
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
        const inserted = await insertIgnoringDuplicates(outbox, records.map(toDeliveryDoc));
        return records.filter((r) => inserted.has(r.deliveryId));
      }),
    due: (now, limit, dueOptions) =>
      run(async () => {
        await flushMoved();
        const excluded = dueOptions?.excludeOwners ?? [];
        const docs = await outbox
          .find(
            excluded.length === 0
              ? { nextAttemptAt: { $lte: now } }
              : { nextAttemptAt: { $lte: now }, owner: { $nin: [...excluded] } },
            bounded,
          )
          .sort({ nextAttemptAt: 1 })
          .limit(limit)
          .toArray();
        return docs.filter((doc) => !moved.has(doc._id)).map(deliveryOf);
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
            readDelivery: () => pendingById(delivery.deliveryId),
          },
          delivery,
          claimOptions,
        ),
      ),
    finishAttempt: (delivery, attempt, outcome) =>
      run(async () => {
        const { nextAttemptAt: _, lastError: __, ...rest } = delivery;
        const next = toDeliveryDoc({ ...rest, ...outcome, attempts: attempt });
        if (outcome.status === "pending") {
          // A retry rewrites the outbox copy, unless a later attempt was recorded (a holder that
          // vanished and came back).
          await outbox.replaceOne({ _id: delivery.deliveryId, attempts: { $lt: attempt } }, next);
        } else {
          // An end moves it to the history by an insert: the first end recorded stays.
          await settle(next);
        }
      }),
    getDelivery: (owner, endpointId, deliveryId) =>
      run(async () => {
        const found = await deliveryById(deliveryId);
        return found?.owner === owner && found.endpointId === endpointId ? found : undefined;
      }),
    listDeliveries: (owner, endpointId, filter) =>
      run(async () => {
        // Newest first over both collections: each gives its first offset + limit, merged.
        const wanted = filter.offset + filter.limit;
        const query = { endpointId, owner };
        const finished = filter.status === undefined ? query : { ...query, status: filter.status };
        const fromOutbox = filter.status === undefined || filter.status === "pending";
        const fromHistory = filter.status !== "pending";
        const newest = { createdAt: -1, eventSeq: -1 } as const;
        const [pendingDocs, endedDocs, pendingTotal, endedTotal] = await Promise.all([
          fromOutbox ? outbox.find(query, bounded).sort(newest).limit(wanted).toArray() : [],
          fromHistory ? history.find(finished, bounded).sort(newest).limit(wanted).toArray() : [],
          fromOutbox ? outbox.countDocuments(query, bounded) : 0,
          fromHistory ? history.countDocuments(finished, bounded) : 0,
        ]);
        const ended = new Set(endedDocs.map((d) => d._id));
        const merged = [...endedDocs, ...pendingDocs.filter((d) => !ended.has(d._id))]
          .map(deliveryOf)
          .sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime() || b.eventSeq - a.eventSeq);
        // A delivery in both (its outbox copy not yet deleted) is counted once.
        const inBoth = pendingDocs.length - (merged.length - endedDocs.length);
        return { deliveries: merged.slice(filter.offset, wanted), total: pendingTotal + endedTotal - inBoth };
      }),
    resend: (owner, endpointId, deliveryId, now) =>
      run(async () => {
        const found = await deliveryById(deliveryId);
        if (found?.owner !== owner || found.endpointId !== endpointId) return undefined;
        const resent: DeliveryRecord = { ...found, status: "pending", nextAttemptAt: now, windowStart: now };
        moved.delete(deliveryId);
        // Into the outbox held back, out of the history (rare, and a scan on FerretDB), then due:
        // an attempt that ended while the old copy was still in the history would have had its
        // insert there ignored as a duplicate, and the delete then lost the delivery altogether
        // (a loaded run listed none). Should this process die in between, the held copy is
        // attempted once its hold ends, and until the history copy is gone that one is shown.
        const held = new Date(now.getTime() + RESEND_HOLD_MS);
        await outbox.replaceOne({ _id: deliveryId }, toDeliveryDoc({ ...resent, nextAttemptAt: held }), {
          upsert: true,
        });
        await history.deleteOne({ _id: deliveryId });
        await outbox.updateOne({ _id: deliveryId }, { $set: { nextAttemptAt: now } });
        return resent;
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
        await flushMoved();
        const old = await history
          .find({ createdAt: { $lt: before } }, { ...bounded, projection: { _id: 1 } })
          .limit(PRUNE_BATCH)
          .toArray();
        if (old.length === 0) return 0;
        const ids = old.map((d) => d._id);
        await claims.deleteMany({ deliveryId: { $in: ids } });
        const { deletedCount } = await history.deleteMany({ _id: { $in: ids } });
        return deletedCount;
      }),
    close: async () => {
      await run(flushMoved).catch(() => {});
    },
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

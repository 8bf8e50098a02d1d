/**
 * The webhook store in MongoDB (and FerretDB): collections `webhook_endpoints`,
 * `webhook_deliveries` (the outbox), `webhook_attempt_claims` and `webhook_state` (the fan-out
 * cursor). See webhook-store.ts for the rules: every race between replicas is an insert of a
 * unique `_id`; updates are made by the one holder of a claim, or are idempotent.
 */
import type { Collection, Db } from "mongodb";
import { isDuplicateKey } from "../agent/mongo-errors.ts";
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
  const cancelPending = (endpointId: string) =>
    deliveries.updateMany(
      { endpointId, status: "pending" },
      { $set: { status: "canceled" }, $unset: { nextAttemptAt: "" } },
    );
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
        if (records.length === 0) return 0;
        try {
          const result = await deliveries.insertMany(records.map(toDeliveryDoc), { ordered: false });
          return result.insertedCount;
        } catch (err) {
          // Some were enqueued already (another replica, or this one before a crash): the rest are in.
          const result = (err as { result?: { insertedCount?: number } }).result;
          const writeErrors = (err as { writeErrors?: unknown[] | unknown }).writeErrors;
          const errors = Array.isArray(writeErrors)
            ? writeErrors
            : writeErrors === undefined
              ? []
              : [writeErrors];
          if (errors.length > 0 && errors.every((e) => (e as { code?: number }).code === 11000)) {
            return result?.insertedCount ?? records.length - errors.length;
          }
          if (isDuplicateKey(err) && errors.length === 0) return 0;
          throw err;
        }
      }),
    due: (now, limit) =>
      run(async () => {
        const docs = await deliveries
          .find({ status: "pending", nextAttemptAt: { $lte: now } }, bounded)
          .sort({ nextAttemptAt: 1 })
          .limit(limit)
          .toArray();
        return docs.map(deliveryOf);
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
            async readDelivery() {
              const doc = await deliveries.findOne({ _id: delivery.deliveryId });
              return doc === null ? undefined : deliveryOf(doc);
            },
          },
          delivery,
          claimOptions,
        ),
      ),
    finishAttempt: (deliveryId, attempt, outcome) =>
      run(async () => {
        const unset: Record<string, ""> = {};
        if (outcome.nextAttemptAt === undefined) unset.nextAttemptAt = "";
        if (outcome.lastError === undefined) unset.lastError = "";
        await deliveries.updateOne(
          { _id: deliveryId, attempts: { $lt: attempt } },
          {
            $set: { ...present(outcome), attempts: attempt },
            ...(Object.keys(unset).length === 0 ? {} : { $unset: unset }),
          },
        );
      }),
    getDelivery: (owner, endpointId, deliveryId) =>
      run(async () => {
        const doc = await deliveries.findOne({ _id: deliveryId, owner, endpointId });
        return doc === null ? undefined : deliveryOf(doc);
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
        const doc = await deliveries.findOneAndUpdate(
          { _id: deliveryId, owner, endpointId },
          { $set: { status: "pending", nextAttemptAt: now, windowStart: now } },
          { returnDocument: "after" },
        );
        return doc === null ? undefined : deliveryOf(doc);
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

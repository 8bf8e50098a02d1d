/** The webhook store's deliveries: enqueued, due, listed, resent and pruned. */
import type { Collection } from "mongodb";
import type { DeliveryRecord, WebhookStore } from "../webhook-store.ts";
import { insertIgnoringDuplicates } from "./mongo-insert-ignoring-duplicates.ts";
import { type ClaimDoc, type DeliveryDoc, deliveryOf, toDeliveryDoc } from "./mongo-webhook-docs.ts";
import type { MongoWebhookOutbox } from "./mongo-webhook-outbox.ts";

/** How long a resent delivery's outbox copy waits while its history copy is deleted (see resend). */
const RESEND_HOLD_MS = 60_000;
/** Deliveries dropped per prune; the next prune takes the rest. */
const PRUNE_BATCH = 1000;

export interface MongoWebhookDeliveriesOptions {
  readonly outbox: Collection<DeliveryDoc>;
  readonly history: Collection<DeliveryDoc>;
  readonly claims: Collection<ClaimDoc>;
  /** Server-side bound on queries that can scan (lists, counts). */
  readonly bounded: { readonly maxTimeMS: number };
  /** Runs one operation under the store's guard, after its indexes exist. */
  readonly run: <T>(op: () => Promise<T>) => Promise<T>;
  /** Where a delivery is: the outbox, the history, or moving between them. */
  readonly moves: MongoWebhookOutbox;
}

export type MongoWebhookDeliveries = Pick<
  WebhookStore,
  "enqueue" | "due" | "getDelivery" | "listDeliveries" | "resend" | "prune"
>;

export function createMongoWebhookDeliveries(options: MongoWebhookDeliveriesOptions): MongoWebhookDeliveries {
  const { outbox, history, claims, bounded, run, moves } = options;
  const { flushMoved, deliveryById, isMoved, unmove } = moves;
  return {
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
        return docs.filter((doc) => !isMoved(doc._id)).map(deliveryOf);
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
        unmove(deliveryId);
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
  };
}

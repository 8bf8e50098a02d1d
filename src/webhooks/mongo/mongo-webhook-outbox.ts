/**
 * The outbox and the history as one place for a delivery: a delivery that ends moves to the
 * history by an insert, and its outbox copy goes in batches (see mongo-webhook-store.ts).
 */
import type { Collection } from "mongodb";
import type { DeliveryRecord } from "../webhook-store.ts";
import { insertIgnoringDuplicates } from "./mongo-insert-ignoring-duplicates.ts";
import { type DeliveryDoc, deliveryOf } from "./mongo-webhook-docs.ts";

export interface MongoWebhookOutboxOptions {
  readonly outbox: Collection<DeliveryDoc>;
  readonly history: Collection<DeliveryDoc>;
}

export interface MongoWebhookOutbox {
  /** Deletes the outbox copies of the deliveries that moved to the history. */
  flushMoved(): Promise<void>;
  /** Ends a delivery: into the history (once), out of the outbox (in the next batch). */
  settle(doc: DeliveryDoc): Promise<void>;
  /** A delivery as callers see it: the history wins over a leftover outbox copy. */
  deliveryById(id: string): Promise<DeliveryRecord | undefined>;
  /** A pending delivery, for attempts: the outbox alone. */
  pendingById(id: string): Promise<DeliveryRecord | undefined>;
  /** Ends every pending delivery to an endpoint as canceled. */
  cancelPending(endpointId: string): Promise<void>;
  /** True while the delivery's outbox copy waits for the next batch delete. */
  isMoved(id: string): boolean;
  /** The delivery is pending again: its outbox copy stays. */
  unmove(id: string): void;
}

export function createMongoWebhookOutbox(options: MongoWebhookOutboxOptions): MongoWebhookOutbox {
  const { outbox, history } = options;
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

  return {
    flushMoved,
    settle,
    deliveryById,
    pendingById,
    cancelPending,
    isMoved: (id) => moved.has(id),
    unmove: (id) => {
      moved.delete(id);
    },
  };
}

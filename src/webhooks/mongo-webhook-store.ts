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
import { isDuplicateKey } from "../agent/mongo-errors.ts";
import { indexedRun } from "../agent/mongo-indexed-run.ts";
import { createMongoWebhookAttempts } from "./mongo/mongo-webhook-attempts.ts";
import { createMongoWebhookDeliveries } from "./mongo/mongo-webhook-deliveries.ts";
import type { ClaimDoc, DeliveryDoc, EndpointDoc, StateDoc } from "./mongo/mongo-webhook-docs.ts";
import { createMongoWebhookEndpoints } from "./mongo/mongo-webhook-endpoints.ts";
import { createMongoWebhookOutbox } from "./mongo/mongo-webhook-outbox.ts";
import type { WebhookStore } from "./webhook-store.ts";

const WRITE_CONCERN = { w: "majority" } as const;

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
  const moves = createMongoWebhookOutbox({ outbox, history });
  const { flushMoved, settle, pendingById, cancelPending } = moves;

  return {
    ...createMongoWebhookEndpoints({ endpoints, bounded, run, cancelPending }),
    ...createMongoWebhookDeliveries({ outbox, history, claims, bounded, run, moves }),
    ...createMongoWebhookAttempts({ claims, outbox, run, pendingById, settle }),
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
    close: async () => {
      await run(flushMoved).catch(() => {});
    },
  };
}

/** The webhook store's attempts: claimed one holder at a time, then finished. */
import type { Collection } from "mongodb";
import { isDuplicateKey } from "../../agent/mongo-errors.ts";
import {
  type AttemptClaim,
  claimNextAttempt,
  type DeliveryRecord,
  type WebhookStore,
} from "../webhook-store.ts";
import { type ClaimDoc, type DeliveryDoc, toDeliveryDoc } from "./mongo-webhook-docs.ts";

export interface MongoWebhookAttemptsOptions {
  readonly claims: Collection<ClaimDoc>;
  readonly outbox: Collection<DeliveryDoc>;
  /** Runs one operation under the store's guard, after its indexes exist. */
  readonly run: <T>(op: () => Promise<T>) => Promise<T>;
  /** A pending delivery, for attempts: the outbox alone. */
  readonly pendingById: (id: string) => Promise<DeliveryRecord | undefined>;
  /** Ends a delivery: into the history (once), out of the outbox (in the next batch). */
  readonly settle: (doc: DeliveryDoc) => Promise<void>;
}

export type MongoWebhookAttempts = Pick<WebhookStore, "claimAttempt" | "finishAttempt">;

export function createMongoWebhookAttempts(options: MongoWebhookAttemptsOptions): MongoWebhookAttempts {
  const { claims, outbox, run, pendingById, settle } = options;
  const claimId = (deliveryId: string, attempt: number) => JSON.stringify([deliveryId, attempt]);
  return {
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
  };
}

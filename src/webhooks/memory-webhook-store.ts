import { createMemoryWebhookEndpoints } from "./memory-webhook-endpoints.ts";
import {
  type AttemptClaim,
  claimNextAttempt,
  type DeliveryRecord,
  type EndpointRecord,
  type WebhookStore,
} from "./webhook-store.ts";

/** The webhook store in memory: one process, the embedded default. */
export function createMemoryWebhookStore(): WebhookStore {
  const endpoints = new Map<string, EndpointRecord>();
  const deliveries = new Map<string, DeliveryRecord>();
  /** The pending ones, so that looking for due work does not walk the whole history. */
  const pending = new Set<string>();
  const put = (d: DeliveryRecord) => {
    deliveries.set(d.deliveryId, d);
    if (d.status === "pending") pending.add(d.deliveryId);
    else pending.delete(d.deliveryId);
  };
  /** Claims by delivery, then attempt. */
  const claims = new Map<string, Map<number, AttemptClaim>>();
  let cursor: number | undefined;
  const newestFirst = <T extends { createdAt: Date }>(a: T, b: T) =>
    b.createdAt.getTime() - a.createdAt.getTime();
  const cancelPending = (endpointId: string) => {
    for (const id of pending) {
      const d = deliveries.get(id) as DeliveryRecord;
      if (d.endpointId === endpointId) {
        const { nextAttemptAt: _, ...rest } = d;
        put({ ...rest, status: "canceled" });
      }
    }
  };
  return {
    ...createMemoryWebhookEndpoints({ endpoints, cancelPending }),
    async enqueue(records) {
      const added: DeliveryRecord[] = [];
      for (const d of records) {
        if (deliveries.has(d.deliveryId)) continue;
        put(d);
        added.push(d);
      }
      return added;
    },
    async due(now, limit, options) {
      const excluded = new Set(options?.excludeOwners);
      const found: DeliveryRecord[] = [];
      for (const id of pending) {
        const d = deliveries.get(id) as DeliveryRecord;
        if (d.nextAttemptAt !== undefined && d.nextAttemptAt <= now && !excluded.has(d.owner)) found.push(d);
      }
      found.sort((a, b) => (a.nextAttemptAt as Date).getTime() - (b.nextAttemptAt as Date).getTime());
      return found.slice(0, limit);
    },
    claimAttempt(delivery, options) {
      const ofDelivery = () => {
        const attempts = claims.get(delivery.deliveryId) ?? new Map<number, AttemptClaim>();
        claims.set(delivery.deliveryId, attempts);
        return attempts;
      };
      return claimNextAttempt(
        {
          async insertClaim(attempt, claim) {
            const attempts = ofDelivery();
            if (attempts.has(attempt)) return false;
            attempts.set(attempt, claim);
            return true;
          },
          async readClaim(attempt) {
            return claims.get(delivery.deliveryId)?.get(attempt);
          },
          async readDelivery() {
            return deliveries.get(delivery.deliveryId);
          },
        },
        delivery,
        options,
      );
    },
    async finishAttempt(delivery, attempt, outcome) {
      const d = deliveries.get(delivery.deliveryId);
      if (d === undefined || d.status !== "pending") return;
      if (outcome.status === "pending" && d.attempts >= attempt) return;
      const { nextAttemptAt: _, lastError: __, ...rest } = d;
      put({ ...rest, ...outcome, attempts: Math.max(attempt, d.attempts) });
    },
    async getDelivery(owner, endpointId, deliveryId) {
      const d = deliveries.get(deliveryId);
      return d?.owner === owner && d.endpointId === endpointId ? d : undefined;
    },
    async listDeliveries(owner, endpointId, filter) {
      const all = [...deliveries.values()]
        .filter(
          (d) =>
            d.owner === owner &&
            d.endpointId === endpointId &&
            (filter.status === undefined || d.status === filter.status),
        )
        .sort((a, b) => newestFirst(a, b) || b.eventSeq - a.eventSeq);
      return { deliveries: all.slice(filter.offset, filter.offset + filter.limit), total: all.length };
    },
    async resend(owner, endpointId, deliveryId, now) {
      const d = deliveries.get(deliveryId);
      if (d?.owner !== owner || d.endpointId !== endpointId) return undefined;
      const resent: DeliveryRecord = { ...d, status: "pending", nextAttemptAt: now, windowStart: now };
      put(resent);
      return resent;
    },
    async cursor() {
      return cursor;
    },
    async advanceCursor(seq) {
      cursor = Math.max(cursor ?? 0, seq);
    },
    async prune(before) {
      let dropped = 0;
      for (const d of deliveries.values()) {
        if (d.status !== "pending" && d.createdAt < before) {
          deliveries.delete(d.deliveryId);
          claims.delete(d.deliveryId);
          dropped++;
        }
      }
      return dropped;
    },
    async close() {},
  };
}

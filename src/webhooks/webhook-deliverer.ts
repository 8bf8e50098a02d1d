import type { DeliveryObserver } from "./delivery-observer.ts";
import type { WebhookSender } from "./http-webhook-sender.ts";
import type { RetrySchedule } from "./retry-schedule.ts";
import { createWebhookAttempt } from "./webhook-attempt.ts";
import { createWebhookReady } from "./webhook-ready.ts";
import type { SignedHeaders } from "./webhook-signer.ts";
import type { DeliveryRecord, EndpointSecret, WebhookStore } from "./webhook-store.ts";

export type { AttemptResult, DeliveryObserver } from "./delivery-observer.ts";

export interface WebhookDeliverer {
  /** Claims due deliveries up to the free capacity and starts their attempts. */
  step(): Promise<void>;
  /** Starts the first attempts at deliveries just enqueued, as far as there is room (the rest wait to be due). */
  offer(deliveries: readonly DeliveryRecord[]): Promise<void>;
  inFlight(): number;
  /** Resolves when the attempts in flight now have ended. */
  drain(): Promise<void>;
}

/**
 * Attempts due deliveries: each under a claim on its next attempt (one replica at a time), signed
 * with the endpoint's secrets, sent by the SSRF-safe sender, and recorded by the holder alone.
 * 2xx delivers; 410 Gone fails the delivery and disables the endpoint; anything else (a redirect,
 * another status, a refused address, no answer) is retried on the schedule until its window ends.
 * An endpoint whose every attempt failed for `disableAfterMs` is disabled.
 *
 * Owners share the process' attempts fairly: each has at most `maxInFlightPerOwner` in flight, and
 * free places go round the owners with work in turn. Endpoints that never answer hold their
 * attempts for the whole timeout; without the cap, one owner's endpoints could hold every place,
 * and every other owner's deliveries would wait behind them.
 */
export function createWebhookDeliverer(options: {
  readonly store: WebhookStore;
  readonly sender: WebhookSender;
  /** This process' name on its claims. */
  readonly worker: string;
  readonly concurrency: number;
  readonly maxInFlightPerEndpoint: number;
  readonly maxInFlightPerOwner: number;
  /** A claim's lease: longer than an attempt can take. */
  readonly leaseMs: number;
  readonly retry: RetrySchedule;
  readonly disableAfterMs: number;
  readonly sign: (id: string, at: Date, body: string, secrets: readonly EndpointSecret[]) => SignedHeaders;
  readonly observer?: DeliveryObserver;
  /** An attempt ended and no candidate is left to take: the loop looks for due work at once. */
  readonly onFree?: () => void;
  readonly now?: () => Date;
  readonly random?: () => number;
}): WebhookDeliverer {
  const observer = options.observer ?? {};
  const now = options.now ?? (() => new Date());
  const random = options.random ?? Math.random;
  const running = new Map<string, Promise<void>>();
  const perEndpoint = new Map<string, number>();
  const perOwner = new Map<string, number>();
  const attempt = createWebhookAttempt({
    store: options.store,
    sender: options.sender,
    retry: options.retry,
    disableAfterMs: options.disableAfterMs,
    sign: options.sign,
    observer,
    now,
    random,
  });

  const start = (delivery: DeliveryRecord, n: number) => {
    const id = delivery.deliveryId;
    increment(perEndpoint, delivery.endpointId, 1);
    increment(perOwner, delivery.owner, 1);
    const work = attempt(delivery, n)
      .catch((error: unknown) => observer.onError?.(error))
      .finally(() => {
        running.delete(id);
        increment(perEndpoint, delivery.endpointId, -1);
        increment(perOwner, delivery.owner, -1);
        afterAttempt();
      });
    running.set(id, work);
  };
  const ready = createWebhookReady({
    concurrency: options.concurrency,
    maxInFlightPerEndpoint: options.maxInFlightPerEndpoint,
    maxInFlightPerOwner: options.maxInFlightPerOwner,
    running,
    perEndpoint,
    perOwner,
  });
  let filling = false;
  let fillAgain = false;
  const fill = async () => {
    if (filling) {
      // An attempt ended while this one claims: it looks again once done, so no place stays empty.
      fillAgain = true;
      return;
    }
    filling = true;
    try {
      do {
        fillAgain = false;
        // Owners passed over in a row (all their candidates wait for room): a whole round of
        // them means nothing can start now.
        let passed = 0;
        while (running.size < options.concurrency && passed < ready.owners()) {
          const { delivery, waiting } = ready.takeFromNextOwner();
          if (delivery === undefined) {
            // Back in the round only when it still has candidates waiting for room.
            if (waiting) passed++;
            continue;
          }
          passed = 0;
          const n = await options.store.claimAttempt(delivery, {
            worker: options.worker,
            now: now(),
            leaseMs: options.leaseMs,
          });
          if (n !== undefined) start(delivery, n);
        }
      } while (fillAgain);
    } finally {
      filling = false;
    }
  };
  /** An attempt ended: the next candidate takes its place (`start` calls this once it has ended). */
  const afterAttempt = () => {
    fill()
      .catch((error: unknown) => observer.onError?.(error))
      .finally(() => {
        // Nothing left to take: the loop looks at the outbox again.
        if (ready.count() === 0) options.onFree?.();
      });
  };
  return {
    async step() {
      if (ready.count() < options.concurrency) {
        ready.add(
          await options.store.due(now(), options.concurrency * 4, { excludeOwners: ready.saturated() }),
        );
      }
      await fill();
    },
    async offer(deliveries) {
      ready.add(deliveries);
      await fill();
    },
    inFlight: () => running.size,
    async drain() {
      await Promise.all(running.values());
    },
  };
}

/** Adds `by` to `key`'s count, dropping counts that come to 0. */
function increment(counts: Map<string, number>, key: string, by: number): void {
  const count = (counts.get(key) ?? 0) + by;
  if (count <= 0) counts.delete(key);
  else counts.set(key, count);
}

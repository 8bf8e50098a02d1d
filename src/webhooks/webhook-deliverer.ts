import type { SendResult, WebhookSender } from "./http-webhook-sender.ts";
import { nextAttemptAt, type RetrySchedule } from "./retry-schedule.ts";
import type { SignedHeaders } from "./webhook-signer.ts";
import type {
  AttemptOutcome,
  DeliveryRecord,
  EndpointRecord,
  EndpointSecret,
  WebhookStore,
} from "./webhook-store.ts";

/** How one attempt ended, for metrics. */
export type AttemptResult =
  | "delivered"
  | "http_error"
  | "gone"
  | "redirect"
  | "refused"
  | "no_answer"
  | "endpoint_gone";

export interface DeliveryObserver {
  onAttempt?(result: AttemptResult, seconds: number): void;
  /** A delivery ended: delivered (with its lag from the event), failed, or canceled. */
  onSettled?(status: "delivered" | "failed" | "canceled", lagSeconds: number): void;
  /** A delivery refused for where it pointed (`reason`: the address range, or "redirect"). */
  onRefused?(reason: string): void;
  onDisabled?(reason: "gone" | "failing"): void;
  onError?(error: unknown): void;
}

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
  const { store, sender, retry } = options;
  const observer = options.observer ?? {};
  const now = options.now ?? (() => new Date());
  const random = options.random ?? Math.random;
  const running = new Map<string, Promise<void>>();
  const perEndpoint = new Map<string, number>();
  const perOwner = new Map<string, number>();

  const settle = (delivery: DeliveryRecord, status: "delivered" | "failed" | "canceled", at: Date) =>
    observer.onSettled?.(status, Math.max(0, (at.getTime() - delivery.eventAt.getTime()) / 1000));

  async function attempt(delivery: DeliveryRecord, n: number): Promise<void> {
    const endpoint = await store.endpointById(delivery.endpointId);
    const at = now();
    if (endpoint === undefined || endpoint.disabledAt !== undefined) {
      await store.finishAttempt(delivery, n, {
        status: "canceled",
        lastResponseCode: delivery.lastResponseCode,
        lastError: endpoint === undefined ? "the endpoint was deleted" : "the endpoint is disabled",
        lastAttemptAt: at,
      });
      observer.onAttempt?.("endpoint_gone", 0);
      settle(delivery, "canceled", at);
      return;
    }
    const headers = options.sign(delivery.deliveryId, at, delivery.payload, endpoint.secrets);
    const started = performance.now();
    const sent = await sender.send({ url: endpoint.url, headers: { ...headers }, body: delivery.payload });
    const result = resultOf(sent);
    observer.onAttempt?.(result, (performance.now() - started) / 1000);
    if (result === "redirect") observer.onRefused?.("redirect");
    if (sent.kind === "refused") observer.onRefused?.(sent.reason);
    const code = sent.kind === "answered" ? sent.status : 0;
    const ended = now();
    let outcome: AttemptOutcome;
    if (result === "delivered") {
      outcome = { status: "delivered", lastResponseCode: code, lastAttemptAt: at, deliveredAt: ended };
    } else if (result === "gone") {
      outcome = {
        status: "failed",
        lastResponseCode: code,
        lastError: "the endpoint answered 410 Gone",
        lastAttemptAt: at,
      };
    } else {
      const next = nextAttemptAt(n, ended, delivery.windowStart, retry, random);
      outcome = {
        status: next === undefined ? "failed" : "pending",
        lastResponseCode: code,
        lastAttemptAt: at,
        ...(next === undefined ? {} : { nextAttemptAt: next }),
        ...errorOf(sent, result),
      };
    }
    await store.finishAttempt(delivery, n, outcome);
    if (outcome.status !== "pending") settle(delivery, outcome.status as "delivered" | "failed", ended);
    await updateHealth(endpoint, result, ended);
  }

  async function updateHealth(endpoint: EndpointRecord, result: AttemptResult, at: Date): Promise<void> {
    if (result === "delivered") {
      if (endpoint.failingSince !== undefined)
        await store.setHealth(endpoint.endpointId, { kind: "healthy" });
    } else if (result === "gone") {
      await store.setHealth(endpoint.endpointId, {
        kind: "disabled",
        at,
        reason: "the endpoint answered 410 Gone",
      });
      observer.onDisabled?.("gone");
    } else if (endpoint.failingSince === undefined) {
      await store.setHealth(endpoint.endpointId, { kind: "failing", since: at });
    } else if (at.getTime() - endpoint.failingSince.getTime() >= options.disableAfterMs) {
      // Another attempt at the same endpoint may have disabled it since this one began.
      if ((await store.endpointById(endpoint.endpointId))?.disabledAt !== undefined) return;
      await store.setHealth(endpoint.endpointId, {
        kind: "disabled",
        at,
        reason: `every delivery failed for ${Math.round(options.disableAfterMs / 3_600_000)} hours`,
      });
      observer.onDisabled?.("failing");
    }
  }

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

  /**
   * Deliveries to attempt next: those just enqueued here, and those the last look at the outbox
   * found due, by owner, each owner's oldest first. An attempt that ends takes the next one from
   * here, so a busy process asks the store what is due once per `concurrency` attempts, not once
   * per attempt. A candidate that moved on meanwhile (another replica attempted it) is simply not
   * claimed. The owners are a round: the one served goes to the back, so each owner with work
   * gets a place in turn, however much work another one has waiting. Each owner keeps at most
   * `maxReadyPerOwner` here, so that one owner's backlog leaves room for the others' work.
   */
  const ready = new Map<string, Map<string, DeliveryRecord>>();
  let readyCount = 0;
  const maxReady = options.concurrency * 8;
  const maxReadyPerOwner = options.maxInFlightPerOwner * 4;
  /** Takes `owner`'s oldest candidate that may start now (its owner and endpoint have room). */
  const take = (owner: string, candidates: Map<string, DeliveryRecord>): DeliveryRecord | undefined => {
    if ((perOwner.get(owner) ?? 0) >= options.maxInFlightPerOwner) return undefined;
    for (const [id, delivery] of candidates) {
      if (running.has(id)) {
        candidates.delete(id);
        readyCount--;
        continue;
      }
      if ((perEndpoint.get(delivery.endpointId) ?? 0) >= options.maxInFlightPerEndpoint) continue;
      candidates.delete(id);
      readyCount--;
      return delivery;
    }
    return undefined;
  };
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
        while (running.size < options.concurrency && passed < ready.size) {
          const [owner, candidates] = ready.entries().next().value as [string, Map<string, DeliveryRecord>];
          ready.delete(owner);
          const delivery = take(owner, candidates);
          if (candidates.size > 0) ready.set(owner, candidates);
          if (delivery === undefined) {
            // Back in the round only when it still has candidates waiting for room.
            if (candidates.size > 0) passed++;
            continue;
          }
          passed = 0;
          const n = await store.claimAttempt(delivery, {
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
  const add = (deliveries: readonly DeliveryRecord[]) => {
    for (const d of deliveries) {
      if (readyCount >= maxReady) break;
      if (running.has(d.deliveryId)) continue;
      let candidates = ready.get(d.owner);
      if (candidates?.has(d.deliveryId) === true || (candidates?.size ?? 0) >= maxReadyPerOwner) continue;
      if (candidates === undefined) {
        candidates = new Map();
        ready.set(d.owner, candidates);
      }
      candidates.set(d.deliveryId, d);
      readyCount++;
    }
  };
  /**
   * Owners the outbox need not be asked about now: those with every place they may take in use,
   * or with candidates enough waiting here. Their due deliveries would fill a look at the outbox
   * (the longest waiting come first) and leave the other owners' work unseen.
   */
  const saturated = (): string[] => {
    const owners = new Set<string>();
    for (const [owner, count] of perOwner) if (count >= options.maxInFlightPerOwner) owners.add(owner);
    for (const [owner, candidates] of ready) if (candidates.size >= maxReadyPerOwner) owners.add(owner);
    return [...owners];
  };
  /** An attempt ended: the next candidate takes its place (`start` calls this once it has ended). */
  const afterAttempt = () => {
    fill()
      .catch((error: unknown) => observer.onError?.(error))
      .finally(() => {
        // Nothing left to take: the loop looks at the outbox again.
        if (readyCount === 0) options.onFree?.();
      });
  };

  return {
    async step() {
      if (readyCount < options.concurrency) {
        add(await store.due(now(), options.concurrency * 4, { excludeOwners: saturated() }));
      }
      await fill();
    },
    async offer(deliveries) {
      add(deliveries);
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

function resultOf(sent: SendResult): AttemptResult {
  if (sent.kind === "refused") return "refused";
  if (sent.kind === "failed") return "no_answer";
  if (sent.status >= 200 && sent.status < 300) return "delivered";
  if (sent.status === 410) return "gone";
  if (sent.status >= 300 && sent.status < 400) return "redirect";
  return "http_error";
}

function errorOf(sent: SendResult, result: AttemptResult): { lastError?: string } {
  if (sent.kind === "refused")
    return {
      lastError: `refused: the endpoint resolves to a ${sent.reason} address, which the server allows when WEBHOOK_ALLOW_PRIVATE_NETWORKS is true`,
    };
  if (sent.kind === "failed") return { lastError: sent.error };
  if (result === "redirect")
    return { lastError: "the endpoint answered with a redirect, which is not followed" };
  return {};
}

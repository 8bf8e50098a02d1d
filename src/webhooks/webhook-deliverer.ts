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
 */
export function createWebhookDeliverer(options: {
  readonly store: WebhookStore;
  readonly sender: WebhookSender;
  /** This process' name on its claims. */
  readonly worker: string;
  readonly concurrency: number;
  readonly maxInFlightPerEndpoint: number;
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
    perEndpoint.set(delivery.endpointId, (perEndpoint.get(delivery.endpointId) ?? 0) + 1);
    const work = attempt(delivery, n)
      .catch((error: unknown) => observer.onError?.(error))
      .finally(() => {
        running.delete(id);
        const left = (perEndpoint.get(delivery.endpointId) ?? 1) - 1;
        if (left === 0) perEndpoint.delete(delivery.endpointId);
        else perEndpoint.set(delivery.endpointId, left);
        afterAttempt();
      });
    running.set(id, work);
  };

  /**
   * Deliveries to attempt next, oldest first: those just enqueued here, and those the last look
   * at the outbox found due. An attempt that ends takes the next one from here, so a busy process
   * asks the store what is due once per `concurrency` attempts, not once per attempt. A candidate
   * that moved on meanwhile (another replica attempted it) is simply not claimed.
   */
  const ready = new Map<string, DeliveryRecord>();
  const maxReady = options.concurrency * 8;
  let filling = false;
  const fill = async () => {
    if (filling) return;
    filling = true;
    try {
      for (const [id, delivery] of ready) {
        if (running.size >= options.concurrency) break;
        if ((perEndpoint.get(delivery.endpointId) ?? 0) >= options.maxInFlightPerEndpoint) continue;
        ready.delete(id);
        if (running.has(id)) continue;
        const n = await store.claimAttempt(delivery, {
          worker: options.worker,
          now: now(),
          leaseMs: options.leaseMs,
        });
        if (n !== undefined) start(delivery, n);
      }
    } finally {
      filling = false;
    }
  };
  const add = (deliveries: readonly DeliveryRecord[]) => {
    for (const d of deliveries) {
      if (ready.size >= maxReady) break;
      if (!running.has(d.deliveryId)) ready.set(d.deliveryId, d);
    }
  };
  /** An attempt ended: the next candidate takes its place (`start` calls this once it has ended). */
  const afterAttempt = () => {
    fill()
      .catch((error: unknown) => observer.onError?.(error))
      .finally(() => {
        // Nothing left to take: the loop looks at the outbox again.
        if (ready.size === 0) options.onFree?.();
      });
  };

  return {
    async step() {
      if (ready.size < options.concurrency) add(await store.due(now(), options.concurrency * 4));
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

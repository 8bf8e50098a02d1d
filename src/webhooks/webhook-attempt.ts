/**
 * One attempt at a delivery, under the claim its caller holds: signed with the endpoint's secrets,
 * sent by the SSRF-safe sender, recorded, and the endpoint's health moved by how it ended.
 */

import type { AttemptResult, DeliveryObserver } from "./delivery-observer.ts";
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

export interface WebhookAttemptOptions {
  readonly store: WebhookStore;
  readonly sender: WebhookSender;
  readonly retry: RetrySchedule;
  readonly disableAfterMs: number;
  readonly sign: (id: string, at: Date, body: string, secrets: readonly EndpointSecret[]) => SignedHeaders;
  readonly observer: DeliveryObserver;
  readonly now: () => Date;
  readonly random: () => number;
}

/** Makes attempt `n` at `delivery` and records how it ended. */
export type WebhookAttempt = (delivery: DeliveryRecord, n: number) => Promise<void>;

export function createWebhookAttempt(options: WebhookAttemptOptions): WebhookAttempt {
  const { store, sender, retry, observer, now, random } = options;

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

  return attempt;
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

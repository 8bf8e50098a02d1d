import { Counter, Gauge, Histogram, type Registry } from "prom-client";
import type { AttemptResult, DeliveryObserver } from "../webhooks/webhook-deliverer.ts";

export interface WebhookMetrics {
  /** What the deliverer reports (attempts, settled deliveries, refusals, disabled endpoints). */
  readonly observer: DeliveryObserver;
  /** An endpoint URL refused at registration for where it points. */
  refusedAtRegistration(reason: string): void;
  /** Watches the attempts in flight. */
  watchInFlight(inFlight: () => number): void;
}

const ATTEMPT_RESULTS: readonly AttemptResult[] = [
  "delivered",
  "http_error",
  "gone",
  "redirect",
  "refused",
  "no_answer",
  "endpoint_gone",
];

/**
 * Webhook deliveries: attempts by result and their duration, deliveries by how they ended and the
 * lag from event to delivery, SSRF refusals by reason and where they were caught, endpoints
 * disabled. Labels never carry an endpoint's URL, id or secret.
 */
export function registerWebhookMetrics(registry: Registry): WebhookMetrics {
  const attempts = new Counter({
    name: "webhook_attempts_total",
    help: "Webhook delivery attempts, by result (delivered, http_error, gone, redirect, refused, no_answer, endpoint_gone).",
    labelNames: ["result"] as const,
    registers: [registry],
  });
  const duration = new Histogram({
    name: "webhook_attempt_duration_seconds",
    help: "How long webhook attempts took, from sending to the answer read.",
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  const settled = new Counter({
    name: "webhook_deliveries_total",
    help: "Webhook deliveries that ended, by status (delivered, failed, canceled).",
    labelNames: ["status"] as const,
    registers: [registry],
  });
  const lag = new Histogram({
    name: "webhook_delivery_lag_seconds",
    help: "From an agent event to its webhook's delivery (2xx answer).",
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 3600, 86400],
    registers: [registry],
  });
  const refused = new Counter({
    name: "webhook_ssrf_refusals_total",
    help: "Webhook URLs and deliveries refused for where they point, by reason (the address range, or redirect) and stage (registration, delivery).",
    labelNames: ["reason", "stage"] as const,
    registers: [registry],
  });
  const disabled = new Counter({
    name: "webhook_endpoints_disabled_total",
    help: "Webhook endpoints disabled, by reason (gone: a 410 answer; failing: every delivery failed for WEBHOOK_DISABLE_AFTER_HOURS).",
    labelNames: ["reason"] as const,
    registers: [registry],
  });
  for (const result of ATTEMPT_RESULTS) attempts.inc({ result }, 0);
  for (const status of ["delivered", "failed", "canceled"]) settled.inc({ status }, 0);
  return {
    observer: {
      onAttempt(result, seconds) {
        attempts.inc({ result });
        if (result !== "endpoint_gone" && result !== "refused") duration.observe(seconds);
      },
      onSettled(status, lagSeconds) {
        settled.inc({ status });
        if (status === "delivered") lag.observe(lagSeconds);
      },
      onRefused: (reason) => refused.inc({ reason, stage: "delivery" }),
      onDisabled: (reason) => disabled.inc({ reason }),
    },
    refusedAtRegistration: (reason) => refused.inc({ reason, stage: "registration" }),
    watchInFlight(inFlight) {
      new Gauge({
        name: "webhook_attempts_in_flight",
        help: "Webhook attempts this process has in flight.",
        registers: [registry],
        collect() {
          this.set(inFlight());
        },
      });
    },
  };
}

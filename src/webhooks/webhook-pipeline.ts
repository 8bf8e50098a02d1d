import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import type { WebhooksConfig } from "../config.ts";
import type { EventLog, LoggedEvent } from "../events/event-log.ts";
import type { Logger } from "../logger.ts";
import { createRateLimitedLog } from "../observability/rate-limited-log.ts";
import type { WebhookMetrics } from "../observability/webhook-metrics.ts";
import { createHttpWebhookSender, type Resolve } from "./http-webhook-sender.ts";
import { createWebhookDeliverer } from "./webhook-deliverer.ts";
import { createWebhookFanout } from "./webhook-fanout.ts";
import { createWebhookLoop, type WebhookLoop } from "./webhook-loop.ts";
import { signWebhook } from "./webhook-signer.ts";
import type { WebhookStore } from "./webhook-store.ts";

/** Answers read from an endpoint, at most: the status is what counts. */
const MAX_RESPONSE_BYTES = 64 * 1024;
/** A claim lasts twice the attempt it covers, and a second: it never runs out under a live holder. */
const leaseMsOf = (timeoutMs: number) => 2 * timeoutMs + 1_000;
const USER_AGENT = "token-agent-service-webhooks/1";

/**
 * The webhook outbox of one process: the fan-out of events into deliveries, the deliverer, the
 * SSRF-safe sender, and the loop that runs them, with metrics and rate-limited logs. Failures are
 * logged without URLs or secrets (an endpoint's URL may carry a token in its path or query).
 */
export function createWebhookPipeline(options: {
  readonly settings: WebhooksConfig;
  readonly store: WebhookStore;
  readonly log: EventLog;
  readonly render: (event: LoggedEvent) => unknown;
  readonly metrics: WebhookMetrics;
  readonly logger: Logger;
  readonly resolve?: Resolve;
}): WebhookLoop {
  const { settings, store, metrics, logger } = options;
  const sender = createHttpWebhookSender({
    timeoutMs: settings.timeoutMs,
    connectTimeoutMs: settings.connectTimeoutMs,
    maxResponseBytes: MAX_RESPONSE_BYTES,
    allowPrivateNetworks: settings.allowPrivateNetworks,
    maxSocketsPerHost: settings.maxInFlightPerEndpoint,
    userAgent: USER_AGENT,
    ...(options.resolve === undefined ? {} : { resolve: options.resolve }),
  });
  // One line a second at most: a database that is down fails every round.
  const errorLog = createRateLimitedLog({ logger, level: "warn", perSecond: 1 });
  const onError = (error: unknown) =>
    errorLog(
      { err: error instanceof Error ? error.message : String(error) },
      "webhook deliveries: a round failed",
    );
  let loop: WebhookLoop | undefined;
  const deliverer = createWebhookDeliverer({
    store,
    sender,
    worker: `${hostname()}:${process.pid}:${randomBytes(4).toString("hex")}`,
    concurrency: settings.concurrency,
    maxInFlightPerEndpoint: settings.maxInFlightPerEndpoint,
    maxInFlightPerOwner: settings.maxInFlightPerOwner,
    leaseMs: leaseMsOf(settings.timeoutMs),
    retry: { baseMs: settings.retryBaseMs, maxMs: settings.retryMaxMs, forMs: settings.retryForMs },
    disableAfterMs: settings.disableAfterMs,
    sign: signWebhook,
    observer: {
      ...metrics.observer,
      onDisabled(reason) {
        metrics.observer.onDisabled?.(reason);
        logger.warn({ reason }, "a webhook endpoint was disabled");
      },
      onError,
    },
    onFree: () => loop?.kick(),
  });
  metrics.watchInFlight(deliverer.inFlight);
  const fanout = createWebhookFanout({ store, log: options.log, render: options.render });
  const inner = createWebhookLoop({ fanout, deliverer, pollIntervalMs: settings.pollIntervalMs, onError });
  let pruning: NodeJS.Timeout | undefined;
  const prune = () => {
    store
      .prune(new Date(Date.now() - settings.deliveryRetentionMs))
      .catch((error: unknown) => onError(error));
  };
  loop = {
    start() {
      inner.start();
      prune();
      pruning = setInterval(prune, PRUNE_INTERVAL_MS).unref();
    },
    kick: inner.kick,
    async stop(timeoutMs) {
      clearInterval(pruning);
      await inner.stop(timeoutMs);
      sender.close();
    },
    stats: inner.stats,
  };
  return loop;
}

const PRUNE_INTERVAL_MS = 10 * 60_000;

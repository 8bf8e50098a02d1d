/**
 * What the server's streams share: one poll of the event log and one of the price source serve
 * every stream of this server, and a revoked key's streams are ended.
 */
import type { Registry as PrometheusRegistry } from "prom-client";
import type { AppContext } from "../app-context.ts";
import { createRevocationWatch, type RevocationWatch } from "../auth/revocation-watch.ts";
import { type AgentEventWatch, createAgentEventWatch } from "../events/agent-event-watch.ts";
import { createEventFeed, type EventFeed } from "../events/event-feed.ts";
import { createRateLimitedLog } from "../observability/rate-limited-log.ts";
import { registerStreamMetrics } from "../observability/stream-metrics.ts";
import type { StreamSettings } from "../rpc/server-stream.ts";
import { createStreamSlots } from "../streams/stream-slots.ts";
import { createPriceWatch, type PriceWatch } from "../token/price-watch.ts";

export interface ServerStreamsOptions {
  readonly context: AppContext;
  /** Where the streams' metrics count. */
  readonly registry: PrometheusRegistry;
  /** Aborted when the server begins to close: its streams end. */
  readonly shutdown: AbortSignal;
}

export interface ServerStreams {
  readonly feed: EventFeed;
  readonly priceWatch: PriceWatch;
  readonly revocations: RevocationWatch;
  readonly streams: StreamSettings;
  readonly agentEvents: AgentEventWatch;
}

export function createServerStreams(options: ServerStreamsOptions): ServerStreams {
  const { context } = options;
  const { config, logger } = context;
  const feedLog = createRateLimitedLog({ logger, level: "warn", perSecond: 1 });
  const feed = createEventFeed({
    log: context.events,
    pollIntervalMs: config.streams.eventPollIntervalMs,
    onError: (error) => {
      feedLog(
        { err: error instanceof Error ? error.message : String(error) },
        "reading the event log failed",
      );
    },
  });
  const priceWatch = createPriceWatch({
    prices: context.prices,
    intervalMs: config.prices.watchIntervalMs,
  });
  const revocationLog = createRateLimitedLog({ logger, level: "warn", perSecond: 1 });
  // Streams outlive the key check at their start: a revoked key's streams are ended.
  const revocations = createRevocationWatch({
    keys: context.apiKeys,
    periodMs: context.apiKeys.cacheTtlMs,
    onError: (error) => {
      revocationLog(
        { err: error instanceof Error ? error.message : String(error) },
        "checking the API keys of open streams failed",
      );
    },
  });
  const streams: StreamSettings = {
    heartbeatMs: config.streams.heartbeatMs,
    bufferMessages: config.streams.bufferMessages,
    slots: createStreamSlots({ maxPerKey: config.streams.maxPerKey }),
    metrics: registerStreamMetrics(options.registry),
    shutdown: options.shutdown,
    revocations,
  };
  const agentEvents = createAgentEventWatch({
    feed,
    agentExists: async (owner, agentId) => (await context.agentStore.get(owner, agentId)) !== undefined,
  });
  return { feed, priceWatch, revocations, streams, agentEvents };
}

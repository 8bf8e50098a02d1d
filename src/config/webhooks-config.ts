import type { ConfigReader } from "./config-reader.ts";

/** Webhook deliveries of agent events (WebhookService). */
export interface WebhooksConfig {
  /** Whether this process delivers (every replica may; leases keep each attempt to one). */
  readonly enabled: boolean;
  /** http:// endpoint URLs are accepted (for development); otherwise https only. */
  readonly allowHttp: boolean;
  /** Deliveries may go to private, loopback and link-local addresses (tests, private deployments). */
  readonly allowPrivateNetworks: boolean;
  readonly maxEndpointsPerOwner: number;
  /** Each attempt's bound, from connecting to the last byte of the answer read. */
  readonly timeoutMs: number;
  /**
   * The bound on connecting (resolving, TCP, TLS) within `timeoutMs`: a host that does not take
   * the connection frees its place soon, while an endpoint that is slow to answer keeps the rest.
   */
  readonly connectTimeoutMs: number;
  /** Attempts in flight in this process, and to one endpoint from this process. */
  readonly concurrency: number;
  readonly maxInFlightPerEndpoint: number;
  /** Attempts in flight for one owner's endpoints from this process: one owner cannot take every place. */
  readonly maxInFlightPerOwner: number;
  /** How often this process looks for new events and for due deliveries. */
  readonly pollIntervalMs: number;
  /** The first retry's delay; each later one doubles, up to `retryMaxMs`, with ±20% jitter. */
  readonly retryBaseMs: number;
  readonly retryMaxMs: number;
  /** How long a delivery is retried, from its event (or its resend). */
  readonly retryForMs: number;
  /** An endpoint whose deliveries all failed for this long is disabled. */
  readonly disableAfterMs: number;
  /** How long the secret before a rotation keeps signing beside the new one. */
  readonly secretOverlapMs: number;
  /** Finished deliveries are kept this long for ListWebhookDeliveries. */
  readonly deliveryRetentionMs: number;
}

export function readWebhooks(reader: ConfigReader): WebhooksConfig {
  const { int, bool, hours } = reader;
  return {
    enabled: bool("WEBHOOKS_ENABLED"),
    allowHttp: bool("WEBHOOK_ALLOW_HTTP"),
    allowPrivateNetworks: bool("WEBHOOK_ALLOW_PRIVATE_NETWORKS"),
    maxEndpointsPerOwner: int("WEBHOOK_MAX_ENDPOINTS_PER_OWNER", 1, 1000),
    timeoutMs: int("WEBHOOK_TIMEOUT_MS", 100, 60_000),
    connectTimeoutMs: int("WEBHOOK_CONNECT_TIMEOUT_MS", 100, 60_000),
    concurrency: int("WEBHOOK_CONCURRENCY", 1, 1000),
    maxInFlightPerEndpoint: int("WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT", 1, 100),
    maxInFlightPerOwner: int("WEBHOOK_MAX_IN_FLIGHT_PER_OWNER", 1, 1000),
    pollIntervalMs: int("WEBHOOK_POLL_INTERVAL_MS", 10, 60_000),
    retryBaseMs: int("WEBHOOK_RETRY_BASE_MS", 1, 3_600_000),
    retryMaxMs: int("WEBHOOK_RETRY_MAX_MS", 1, 86_400_000),
    retryForMs: hours("WEBHOOK_RETRY_FOR_HOURS", 24 * 30),
    disableAfterMs: hours("WEBHOOK_DISABLE_AFTER_HOURS", 24 * 365),
    secretOverlapMs: hours("WEBHOOK_SECRET_OVERLAP_HOURS", 24 * 30),
    deliveryRetentionMs: hours("WEBHOOK_DELIVERY_RETENTION_HOURS", 24 * 365),
  };
}

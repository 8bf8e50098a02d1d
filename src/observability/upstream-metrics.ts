import { Counter, Gauge, Histogram, type Registry } from "prom-client";
import type { CircuitPosition, UpstreamOutcome } from "../upstream/json-upstream.ts";
import type { CacheLookup } from "../upstream/swr-cache.ts";

/** Upstream HTTP API call durations, in seconds. */
const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const CIRCUIT_VALUES: Record<CircuitPosition, number> = { closed: 0, half_open: 1, open: 2 };

export interface UpstreamMetrics {
  /** The callback a JSON upstream reports its calls to. */
  onCall(upstream: string): (endpoint: string, outcome: UpstreamOutcome, seconds: number) => void;
  /** The callback a JSON upstream reports its circuit's changes to. */
  onCircuit(upstream: string): (position: CircuitPosition) => void;
  /** The callback a cache reports its lookups to. */
  onLookup(cache: string): (lookup: CacheLookup, count: number) => void;
}

/**
 * Calls to upstream HTTP APIs (Jupiter) on the server's registry: every call by upstream,
 * endpoint and outcome (`ok`, `timeout`, `unreachable`, `rate_limited`, `http_error`,
 * `too_large`, `bad_response`, `rejected` (a 4xx the caller reads, like Jupiter's no route),
 * `aborted` (the caller gave up), and the calls not made: `circuit_open`, `overloaded`), their
 * durations, each circuit breaker's position, and the caches' lookups by result (`hit`, `miss`,
 * `stale`: served stale while it revalidates or while the upstream fails).
 */
export function registerUpstreamMetrics(registry: Registry): UpstreamMetrics {
  const calls = new Counter({
    name: "upstream_requests_total",
    help: "Calls to upstream HTTP APIs, by upstream, endpoint and outcome (circuit_open and overloaded were not made).",
    labelNames: ["upstream", "endpoint", "outcome"] as const,
    registers: [registry],
  });
  const duration = new Histogram({
    name: "upstream_request_duration_seconds",
    help: "Time one call to an upstream HTTP API took, by upstream and endpoint, in seconds.",
    labelNames: ["upstream", "endpoint"] as const,
    buckets: DURATION_BUCKETS,
    registers: [registry],
  });
  const circuit = new Gauge({
    name: "upstream_circuit_state",
    help: "Position of an upstream's circuit breaker: 0 closed, 1 half-open (one trial call), 2 open (no calls).",
    labelNames: ["upstream"] as const,
    registers: [registry],
  });
  const lookups = new Counter({
    name: "cache_lookups_total",
    help: "Lookups in the caches in front of upstream APIs, by cache and result (hit, miss, stale).",
    labelNames: ["cache", "result"] as const,
    registers: [registry],
  });
  return {
    onCall(upstream) {
      circuit.set({ upstream }, 0);
      return (endpoint, outcome, seconds) => {
        calls.inc({ upstream, endpoint, outcome });
        if (outcome !== "circuit_open" && outcome !== "overloaded" && seconds > 0) {
          duration.observe({ upstream, endpoint }, seconds);
        }
      };
    },
    onCircuit: (upstream) => (position) => circuit.set({ upstream }, CIRCUIT_VALUES[position]),
    onLookup(cache) {
      // Children bound once: the warm price path counts on every call.
      const children = {
        hit: lookups.labels({ cache, result: "hit" }),
        miss: lookups.labels({ cache, result: "miss" }),
        stale: lookups.labels({ cache, result: "stale" }),
      };
      return (lookup, count) => children[lookup].inc(count);
    },
  };
}

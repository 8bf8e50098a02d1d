import type { DescMethod } from "@bufbuild/protobuf";
import type { Interceptor } from "@connectrpc/connect";
import { codeToString } from "@connectrpc/connect/protocol-connect";
import type { MongoClient } from "mongodb";
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";
import { procedureOf, protocolOf } from "../rpc/call-labels.ts";
import { observeCall } from "../rpc/observe-call.ts";
import { registerMongoPoolMetrics } from "./mongo-pool-metrics.ts";

/** Call durations in seconds: from half a millisecond (a catalog read) to 5 s (a stuck dependency). */
const DURATION_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];

export interface Metrics {
  /** This server's own registry; serve it with `registry.metrics()`. */
  readonly registry: Registry;
  /** Counts, times and gauges every call; place it outside the error interceptor. */
  readonly interceptor: Interceptor;
  /**
   * Counts a connection or request turned away before any RPC handler saw it. `reason` comes from
   * a fixed set (see Rejection in dual-protocol-server.ts), so the series stay bounded.
   */
  rejected(reason: string): void;
}

/**
 * Prometheus metrics for one server: calls by procedure, protocol and code, their durations, the
 * calls in flight, the process's own figures, and the MongoDB connection pool when there is one.
 * The registry is the server's own, not prom-client's global default, so several servers in one
 * process (as in tests) never share or double-register series.
 */
export function createMetrics(options: { mongoClient?: MongoClient | undefined } = {}): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const labelNames = ["procedure", "protocol", "code"] as const;
  const requests = new Counter({
    name: "rpc_requests_total",
    help: "RPCs completed, by procedure, protocol and status code.",
    labelNames,
    registers: [registry],
  });
  const duration = new Histogram({
    name: "rpc_request_duration_seconds",
    help: "Time from the start of an RPC to its end (the last message for streams), in seconds.",
    labelNames,
    buckets: DURATION_BUCKETS,
    registers: [registry],
  });
  const inFlight = new Gauge({
    name: "rpc_requests_in_flight",
    help: "RPCs started and not yet completed, by procedure and protocol.",
    labelNames: ["procedure", "protocol"] as const,
    registers: [registry],
  });
  const rejections = new Counter({
    name: "http_rejections_total",
    help: "Connections and requests turned away before reaching an RPC handler, by reason.",
    labelNames: ["reason"] as const,
    registers: [registry],
  });
  if (options.mongoClient !== undefined) registerMongoPoolMetrics(options.mongoClient, registry);

  // Label objects are made once per procedure, protocol and code and reused, so a call adds no
  // allocations of its own here.
  type Series = { labels: { procedure: string; protocol: string }; byCode: Map<number | undefined, object> };
  const series = new WeakMap<DescMethod, Map<string, Series>>();
  const seriesOf = (method: DescMethod, protocol: string): Series => {
    let byProtocol = series.get(method);
    if (byProtocol === undefined) {
      byProtocol = new Map();
      series.set(method, byProtocol);
    }
    let s = byProtocol.get(protocol);
    if (s === undefined) {
      s = { labels: { procedure: procedureOf(method), protocol }, byCode: new Map() };
      byProtocol.set(protocol, s);
    }
    return s;
  };

  const interceptor: Interceptor = (next) => (req) => {
    const s = seriesOf(req.method, protocolOf(req));
    const started = performance.now();
    inFlight.inc(s.labels);
    return observeCall(next, req, (code) => {
      let labels = s.byCode.get(code);
      if (labels === undefined) {
        labels = { ...s.labels, code: code === undefined ? "ok" : codeToString(code) };
        s.byCode.set(code, labels);
      }
      inFlight.dec(s.labels);
      requests.inc(labels);
      duration.observe(labels, (performance.now() - started) / 1000);
    });
  };
  return { registry, interceptor, rejected: (reason) => rejections.inc({ reason }) };
}

import type { DescMethod } from "@bufbuild/protobuf";
import type { Code, Interceptor } from "@connectrpc/connect";
import { codeToString } from "@connectrpc/connect/protocol-connect";
import type { MongoClient } from "mongodb";
import { Counter, collectDefaultMetrics, type Metric, Registry } from "prom-client";
import { procedureOf, protocolOf } from "../rpc/call-labels.ts";
import { observeCall } from "../rpc/observe-call.ts";
import { registerMongoCommandMetrics } from "./mongo-command-metrics.ts";
import { registerMongoPoolMetrics } from "./mongo-pool-metrics.ts";

type Labels = Record<string, string | number>;

/** The calls of one procedure over one protocol. */
interface CallSeries {
  readonly labels: { procedure: string; protocol: string };
  inFlight: number;
  readonly byCode: Map<Code | undefined, Ended>;
}

/** The calls of a series that ended with one code: how many, their total time, and per bucket. */
interface Ended {
  readonly labels: Labels;
  count: number;
  sum: number;
  /** Calls per duration bucket, not cumulative; the last is past the largest bound. */
  readonly buckets: number[];
}

/**
 * Registers a metric whose samples are read from the service's own counts when scraped, in the
 * shape prom-client's registry formats (as its Counter, Gauge and Histogram give them).
 */
function registerCollected(
  registry: Registry,
  metric: {
    name: string;
    help: string;
    type: "counter" | "gauge" | "histogram";
    values: () => { labels: Labels; value: number; metricName?: string }[];
  },
): void {
  const { name, help, type, values } = metric;
  const object = {
    name,
    help,
    type,
    aggregator: "sum",
    collect() {},
    reset() {},
    get: async () => ({ name, help, type, aggregator: "sum", values: values() }),
  };
  registry.registerMetric(object as unknown as Metric);
}

/** Call durations in seconds: from half a millisecond (a catalog read) to 5 s (a stuck dependency). */
const DURATION_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];

export interface Metrics {
  /** This server's own registry; serve it with `registry.metrics()`. */
  readonly registry: Registry;
  /** Counts, times and gauges every call; place it outside the error interceptor. */
  readonly interceptor: Interceptor;
  /**
   * Counts a connection or request turned away before any RPC handler saw it. `reason` comes from
   * a fixed set (see Rejection in http/rejection.ts), so the series stay bounded.
   */
  rejected(reason: string): void;
}

/**
 * Prometheus metrics for one server: calls by procedure, protocol and code, their durations, the
 * calls in flight, the process's own figures, and the MongoDB connection pool and commands when there is one.
 * The registry is the server's own, not prom-client's global default, so several servers in one
 * process (as in tests) never share or double-register series.
 */
export function createMetrics(
  options: {
    mongoClient?: MongoClient | undefined;
    /** Log lines dropped so far (see droppedLogLines in src/logger.ts). */
    logLinesDropped?: () => number;
    /** The process's registry, when other parts count there too; a new one otherwise. */
    registry?: Registry;
  } = {},
): Metrics {
  const registry = options.registry ?? new Registry();
  collectDefaultMetrics({ register: registry });
  const rejections = new Counter({
    name: "http_rejections_total",
    help: "Connections and requests turned away before reaching an RPC handler, by reason.",
    labelNames: ["reason"] as const,
    registers: [registry],
  });
  if (options.mongoClient !== undefined) {
    registerMongoPoolMetrics(options.mongoClient, registry);
    registerMongoCommandMetrics(options.mongoClient, registry);
  }
  const logLinesDropped = options.logLinesDropped ?? (() => 0);
  registerCollected(registry, {
    name: "log_lines_dropped_total",
    help: "Log lines dropped because stdout did not keep up (LOG_BUFFER_BYTES held) or was closed.",
    type: "counter",
    values: () => [{ labels: {}, value: logLinesDropped() }],
  });

  // A call only bumps plain numbers in its series (made once per procedure, protocol and code);
  // the three metrics below read them when scraped. prom-client's own counters hash a label
  // object on every update, which cost more than the rest of the bookkeeping of a call.
  const series = new WeakMap<DescMethod, Map<string, CallSeries>>();
  const all: CallSeries[] = [];
  const seriesOf = (method: DescMethod, protocol: string): CallSeries => {
    let byProtocol = series.get(method);
    if (byProtocol === undefined) {
      byProtocol = new Map();
      series.set(method, byProtocol);
    }
    let s = byProtocol.get(protocol);
    if (s === undefined) {
      s = { labels: { procedure: procedureOf(method), protocol }, inFlight: 0, byCode: new Map() };
      byProtocol.set(protocol, s);
      all.push(s);
    }
    return s;
  };
  const endedOf = (s: CallSeries, code: Code | undefined): Ended => {
    let ended = s.byCode.get(code);
    if (ended === undefined) {
      ended = {
        labels: { ...s.labels, code: code === undefined ? "ok" : codeToString(code) },
        count: 0,
        sum: 0,
        buckets: new Array<number>(DURATION_BUCKETS.length + 1).fill(0),
      };
      s.byCode.set(code, ended);
    }
    return ended;
  };
  const endedSeries = () => all.flatMap((s) => [...s.byCode.values()]);
  registerCollected(registry, {
    name: "rpc_requests_total",
    help: "RPCs completed, by procedure, protocol and status code.",
    type: "counter",
    values: () => endedSeries().map((e) => ({ labels: e.labels, value: e.count })),
  });
  registerCollected(registry, {
    name: "rpc_request_duration_seconds",
    help: "Time from the start of an RPC to its end (the last message for streams), in seconds.",
    type: "histogram",
    values: () =>
      endedSeries().flatMap((e) => {
        let cumulative = 0;
        const buckets = e.buckets.map((n, i) => {
          cumulative += n;
          const le = i < DURATION_BUCKETS.length ? (DURATION_BUCKETS[i] as number) : "+Inf";
          return {
            metricName: "rpc_request_duration_seconds_bucket",
            labels: { ...e.labels, le },
            value: cumulative,
          };
        });
        return [
          ...buckets,
          { metricName: "rpc_request_duration_seconds_sum", labels: e.labels, value: e.sum },
          { metricName: "rpc_request_duration_seconds_count", labels: e.labels, value: e.count },
        ];
      }),
  });
  registerCollected(registry, {
    name: "rpc_requests_in_flight",
    help: "RPCs started and not yet completed, by procedure and protocol.",
    type: "gauge",
    values: () => all.map((s) => ({ labels: s.labels, value: s.inFlight })),
  });

  const interceptor: Interceptor = (next) => (req) => {
    const s = seriesOf(req.method, protocolOf(req));
    const started = performance.now();
    s.inFlight++;
    return observeCall(next, req, (code) => {
      const seconds = (performance.now() - started) / 1000;
      const ended = endedOf(s, code);
      s.inFlight--;
      ended.count++;
      ended.sum += seconds;
      let bucket = 0;
      while (bucket < DURATION_BUCKETS.length && seconds > (DURATION_BUCKETS[bucket] as number)) bucket++;
      (ended.buckets[bucket] as number)++;
    });
  };
  return { registry, interceptor, rejected: (reason) => rejections.inc({ reason }) };
}

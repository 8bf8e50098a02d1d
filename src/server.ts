import type * as http from "node:http";
import type { AddressInfo, Server as NetServer } from "node:net";
import type { Registry as MessageRegistry } from "@bufbuild/protobuf";
import type { ConnectRouter } from "@connectrpc/connect";
import type { Registry as PrometheusRegistry } from "prom-client";
import type { AppContext } from "./app-context.ts";
import { createCorsHandler } from "./http/cors.ts";
import { drainUnreadBody } from "./http/drain-unread-body.ts";
import { createDualProtocolServer } from "./http/dual-protocol-server.ts";
import { createMetricsEndpoint } from "./http/metrics-endpoint.ts";
import { createProbeHandler } from "./http/probes.ts";
import { createStalledWrites } from "./http/stalled-writes.ts";
import { createWrongMethodHandler } from "./http/wrong-method.ts";
import { createLeanUnary } from "./lean/lean-unary.ts";
import { droppedLogLines } from "./logger.ts";
import { createMetrics } from "./observability/metrics.ts";
import { createRateLimitedLog } from "./observability/rate-limited-log.ts";
import { createDocsHandler } from "./rest/docs-handler.ts";
import { callContextValues } from "./rpc/client-address.ts";
import { clampDeadlineHeaders } from "./rpc/deadline.ts";
import { createReadinessPoller } from "./rpc/readiness-poller.ts";
import { createRoutes } from "./rpc/routes.ts";
import { createConnectStack } from "./server/connect-stack.ts";
import { createServerInterceptors } from "./server/server-interceptors.ts";
import { createServerStreams } from "./server/server-streams.ts";

export interface Server {
  /** The listening socket (connection events, addresses); `listen` starts it. */
  readonly listener: NetServer;
  /** Starts listening on the configured host and port (port 0: any free port). */
  listen(): Promise<AddressInfo>;
  /** Stops accepting, lets calls in flight finish within the shutdown timeout, then closes. */
  close(): Promise<void>;
  /** What the server's streams hold now: for leak checks, and a look inside while one runs. */
  streamStats(): {
    readonly slots: { streams: number; keys: number };
    readonly events: { watches: number; live: number; timer: boolean };
    readonly prices: { subscriptions: number; mints: number; timer: boolean };
    readonly revocations: { keys: number; holds: number; timer: boolean };
  };
}

export interface BuildOptions {
  /**
   * Services served beside the service's own, through the same stack (listener, interceptors,
   * fallback): the Connect conformance suite's service in test/conformance/. `registry` names the
   * messages their google.protobuf.Any fields carry, which the JSON codec must know.
   */
  readonly extraServices?: {
    readonly routes: (router: ConnectRouter) => void;
    readonly registry?: MessageRegistry;
  };
  /** The Prometheus registry /metrics serves; the process's other parts (the chain) count there too. */
  readonly metricsRegistry?: PrometheusRegistry;
}

/**
 * Builds the server without listening, so tests start it on port 0 and `main.ts` on PORT. Every
 * RPC is served over the Connect protocol (JSON and binary, GET for side-effect-free methods),
 * gRPC and gRPC-Web, on HTTP/1.1 and h2c alike, with gRPC health checking and server reflection
 * beside the contract's services, and plain HTTP probes and Prometheus metrics beside the RPCs.
 */
export function build(context: AppContext, options: BuildOptions = {}): Server {
  const { config, logger } = context;
  const shutdown = new AbortController();
  // One probe per dependency answers every readiness question asked while it runs (/readyz,
  // health checks), so probes cannot pile requests onto a dependency that is slow to answer.
  const store = createReadinessPoller({ isReady: () => context.isStoreReady(), intervalMs: 1000 });
  const chain = createReadinessPoller({ isReady: () => context.isChainReady(), intervalMs: 1000 });
  const cors = createCorsHandler({ origins: config.corsOrigins });
  const probes = createProbeHandler({
    isReady: async () =>
      !shutdown.signal.aborted && (await Promise.all([store.check(), chain.check()])).every(Boolean),
    // Warns, and stays ready: every replica pays with the same executor, so taking this one out of
    // rotation would not fund it, and would stop token reads and agent management too.
    warnings: () => {
      const problem = context.executorBalance?.problem();
      return problem === undefined ? [] : [problem];
    },
  });
  const metrics = createMetrics({
    mongoClient: context.mongoClient,
    logLinesDropped: droppedLogLines(logger),
    ...(options.metricsRegistry === undefined ? {} : { registry: options.metricsRegistry }),
  });
  const metricsEndpoint = createMetricsEndpoint({ registry: metrics.registry });
  const docs = createDocsHandler();
  const { feed, priceWatch, revocations, streams, agentEvents } = createServerStreams({
    context,
    registry: metrics.registry,
    shutdown: shutdown.signal,
  });
  const routes = createRoutes(context, {
    shutdownSignal: shutdown.signal,
    chain,
    store,
    streams,
    agentEvents,
    priceWatch,
  });
  // Requests turned away before any service sees them: counted by reason, logged at a bounded rate.
  const rejectionLog = createRateLimitedLog({ logger, level: "info", perSecond: 10 });
  const rejected = (reason: string) => {
    metrics.rejected(reason);
    rejectionLog({ reason }, "request rejected");
  };
  const stalledWrites = createStalledWrites({ timeoutMs: config.streams.writeTimeoutMs });
  const interceptors = createServerInterceptors({ context, metrics: metrics.interceptor, rejected });
  // JSON callers always see the whole envelope: `success`, empty lists, zeros and false included.
  const jsonOptions = { alwaysEmitImplicit: true, registry: options.extraServices?.registry };
  const { connect, services, streamingPaths, serverStreamingPaths, procedureMethods } = createConnectStack({
    config,
    routes,
    extraRoutes: options.extraServices?.routes,
    interceptors,
    jsonOptions,
    fallbacks: [docs, probes, metricsEndpoint],
    rejected,
  });
  const wrongMethod = createWrongMethodHandler(() => procedureMethods);
  // Unary calls in the common shapes skip connect-node's per-call machinery; the rest (streams,
  // unusual encodings) go to connect-node. Both run the same implementations and interceptors.
  const lean = createLeanUnary({
    services,
    interceptors,
    jsonOptions,
    readMaxBytes: config.maxRequestBytes,
    streamWriteTimeoutMs: config.streams.writeTimeoutMs,
    contextValues: callContextValues,
    onRejected: rejected,
  });
  const dual = createDualProtocolServer({
    handler(req, res) {
      if (cors(req, res)) return;
      if (wrongMethod(req, res)) return;
      // The lean path clamps the deadline of the calls it takes itself.
      if (
        config.leanUnary &&
        req.httpVersionMajor === 1 &&
        lean.http1(req as http.IncomingMessage, res as http.ServerResponse)
      )
        return;
      clampDeadlineHeaders(req.headers);
      drainUnreadBody(req);
      const url = req.url ?? "";
      const query = url.indexOf("?");
      if (serverStreamingPaths.has(query < 0 ? url : url.slice(0, query))) stalledWrites.watch(res);
      connect(req, res);
    },
    streamHandler: config.leanUnary ? lean.http2 : undefined,
    limits: config.http,
    onRejected: rejected,
    isStreamingRequest: (path) => streamingPaths.has(path),
  });

  return {
    listener: dual.server,
    listen() {
      return new Promise((resolve, reject) => {
        dual.server.once("error", reject);
        dual.server.listen(config.port, config.host, () => {
          dual.server.off("error", reject);
          resolve(dual.server.address() as AddressInfo);
        });
      });
    },
    streamStats: () => ({
      slots: streams.slots.stats(),
      events: feed.stats(),
      prices: priceWatch.stats(),
      revocations: revocations.stats(),
    }),
    async close() {
      // Readiness and health turn NOT_SERVING, and health watches and other streams end (with
      // unavailable, so clients reconnect elsewhere), before the drain begins.
      shutdown.abort();
      feed.close();
      priceWatch.close();
      revocations.close();
      stalledWrites.stop();
      await dual.close(config.shutdownTimeoutMs);
    },
  };
}

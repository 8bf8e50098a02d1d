import type * as http from "node:http";
import type { AddressInfo, Server as NetServer } from "node:net";
import type { Registry as MessageRegistry } from "@bufbuild/protobuf";
import { type ConnectRouter, createServiceImplSpec, type ServiceImplSpec } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import type { Registry as PrometheusRegistry } from "prom-client";
import type { AppContext } from "./app-context.ts";
import { createRateLimiter } from "./auth/rate-limiter.ts";
import { createRevocationWatch } from "./auth/revocation-watch.ts";
import { createAgentEventWatch } from "./events/agent-event-watch.ts";
import { createEventFeed } from "./events/event-feed.ts";
import { createCorsHandler } from "./http/cors.ts";
import { drainUnreadBody } from "./http/drain-unread-body.ts";
import { createDualProtocolServer } from "./http/dual-protocol-server.ts";
import { createMetricsEndpoint } from "./http/metrics-endpoint.ts";
import { createProbeHandler } from "./http/probes.ts";
import { createStalledWrites } from "./http/stalled-writes.ts";
import { answerUnknownRoute } from "./http/unknown-route.ts";
import { createWrongMethodHandler } from "./http/wrong-method.ts";
import { createLeanUnary } from "./lean/lean-unary.ts";
import { droppedLogLines } from "./logger.ts";
import { createMetrics } from "./observability/metrics.ts";
import { createRateLimitedLog } from "./observability/rate-limited-log.ts";
import { registerStreamMetrics } from "./observability/stream-metrics.ts";
import { createDocsHandler } from "./rest/docs-handler.ts";
import { createRestHandler } from "./rest/rest-handler.ts";
import { createAuthInterceptor } from "./rpc/auth-interceptor.ts";
import { callContextValues } from "./rpc/client-address.ts";
import { createErrorInterceptor } from "./rpc/connect-error-from.ts";
import { clampDeadlineHeaders, createDeadlineInterceptor } from "./rpc/deadline.ts";
import { withDecodeErrorsAsInvalidArgument } from "./rpc/decode-errors.ts";
import { createLoggingInterceptor, createUnexpectedErrorLogger } from "./rpc/logging-interceptor.ts";
import { createReadinessPoller } from "./rpc/readiness-poller.ts";
import { createRoutes } from "./rpc/routes.ts";
import type { StreamSettings } from "./rpc/server-stream.ts";
import { createStreamSlots } from "./streams/stream-slots.ts";
import { createPriceWatch } from "./token/price-watch.ts";

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
  const feedLog = createRateLimitedLog({ logger, level: "warn", perSecond: 1 });
  // One poll of the event log and one of the price source serve every stream of this server.
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
    metrics: registerStreamMetrics(metrics.registry),
    shutdown: shutdown.signal,
    revocations,
  };
  const agentEvents = createAgentEventWatch({
    feed,
    agentExists: async (owner, agentId) => (await context.agentStore.get(owner, agentId)) !== undefined,
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
  /** Paths of RPCs whose request is a stream: REQUEST_TIMEOUT_MS does not cut them off. */
  const streamingPaths = new Set<string>();
  /** Paths of RPCs whose answer is a stream: connect-node's writes of them get a deadline. */
  const serverStreamingPaths = new Set<string>();
  const stalledWrites = createStalledWrites({ timeoutMs: config.streams.writeTimeoutMs });
  /** Each Connect procedure path and the HTTP methods it takes (POST; GET too for side-effect-free ones). */
  const procedureMethods = new Map<string, readonly string[]>();
  const wrongMethod = createWrongMethodHandler(() => procedureMethods);
  /** REST paths from the contract's google.api.http rules, served by the same Connect handlers. */
  let rest: ReturnType<typeof createRestHandler> = () => false;
  // Outermost first. Logging and metrics see every call as its caller does, so they sit outside
  // the conversion of errors to the codes callers receive.
  // Authentication, scopes and rate limits come last: their refusals are logged, counted and
  // answered like any other error.
  const { auth } = config;
  const interceptors = [
    createLoggingInterceptor({ logger }),
    metrics.interceptor,
    createDeadlineInterceptor(),
    createErrorInterceptor(createUnexpectedErrorLogger(logger)),
    createAuthInterceptor({
      mode: auth.mode,
      keys: context.apiKeys,
      limiter: createRateLimiter(),
      limits: {
        read: { name: "read", ...auth.read },
        write: { name: "write", ...auth.write },
        anonymous: { name: "anonymous", ...auth.anonymous },
      },
      publicTokenReads: auth.publicTokenReads,
      publicReflection: auth.publicReflection,
      onRejected: rejected,
    }),
  ];
  // Browsers always see the seed's envelope: `success`, empty lists, zeros and false included.
  const jsonOptions = { alwaysEmitImplicit: true, registry: options.extraServices?.registry };
  /** Every service implementation, as the router holds it, for the lean unary path. */
  const services: ServiceImplSpec[] = [];
  const connect = connectNodeAdapter({
    routes(router) {
      const recording: ConnectRouter = {
        handlers: router.handlers,
        service(service, impl, serviceOptions) {
          services.push(createServiceImplSpec(service, impl));
          return router.service(service, impl, serviceOptions);
        },
        rpc(method, impl, rpcOptions) {
          services.push({
            service: method.parent,
            methods: { [method.localName]: { kind: method.methodKind, method, impl } },
          } as ServiceImplSpec);
          return router.rpc(method, impl, rpcOptions);
        },
      };
      routes(recording);
      options.extraServices?.routes(recording);
      router.handlers.forEach((handler, i) => {
        router.handlers[i] = withDecodeErrorsAsInvalidArgument(handler, rejected);
      });
      for (const handler of router.handlers) {
        const kind = handler.method.methodKind;
        if (kind === "client_streaming" || kind === "bidi_streaming") streamingPaths.add(handler.requestPath);
        if (kind === "server_streaming") serverStreamingPaths.add(handler.requestPath);
        procedureMethods.set(handler.requestPath, handler.allowedMethods);
      }
      rest = createRestHandler({
        handlers: router.handlers,
        maxRequestBytes: config.maxRequestBytes,
        streamWriteTimeoutMs: config.streams.writeTimeoutMs,
        onRejected: rejected,
      });
    },
    readMaxBytes: config.maxRequestBytes,
    jsonOptions,
    interceptors,
    contextValues: (req) => callContextValues(req.socket.remoteAddress),
    fallback(req, res) {
      if (rest(req, res) || docs(req, res) || probes(req, res) || metricsEndpoint(req, res)) return;
      rejected("unknown_route");
      answerUnknownRoute(req, res);
    },
  });
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

import type { AddressInfo } from "node:net";
import type { Registry } from "@bufbuild/protobuf";
import type { ConnectRouter } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import type { AppContext } from "./app-context.ts";
import { createCorsHandler } from "./http/cors.ts";
import { drainUnreadBody } from "./http/drain-unread-body.ts";
import { createDualProtocolServer } from "./http/dual-protocol-server.ts";
import { createMetricsEndpoint } from "./http/metrics-endpoint.ts";
import { createProbeHandler } from "./http/probes.ts";
import { answerUnknownRoute } from "./http/unknown-route.ts";
import { createMetrics } from "./observability/metrics.ts";
import { createErrorInterceptor } from "./rpc/connect-error-from.ts";
import { createLoggingInterceptor, createUnexpectedErrorLogger } from "./rpc/logging-interceptor.ts";
import { createReadinessPoller } from "./rpc/readiness-poller.ts";
import { createRoutes } from "./rpc/routes.ts";

export interface Server {
  /** Starts listening on the configured host and port (port 0: any free port). */
  listen(): Promise<AddressInfo>;
  /** Stops accepting, lets calls in flight finish within the shutdown timeout, then closes. */
  close(): Promise<void>;
}

export interface BuildOptions {
  /**
   * Services served beside the service's own, through the same stack (listener, interceptors,
   * fallback): the Connect conformance suite's service in test/conformance/. `registry` names the
   * messages their google.protobuf.Any fields carry, which the JSON codec must know.
   */
  readonly extraServices?: { readonly routes: (router: ConnectRouter) => void; readonly registry?: Registry };
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
  // One database ping answers every readiness question asked while it runs (/readyz, health
  // checks), so probes cannot pile pings onto a database that is slow to answer.
  const readiness = createReadinessPoller({ isReady: () => context.isReady(), intervalMs: 1000 });
  const cors = createCorsHandler({ origins: config.corsOrigins });
  const probes = createProbeHandler({
    isReady: async () => !shutdown.signal.aborted && (await readiness.check()),
  });
  const metrics = createMetrics({ mongoClient: context.mongoClient });
  const metricsEndpoint = createMetricsEndpoint({ registry: metrics.registry });
  const connect = connectNodeAdapter({
    routes(router) {
      createRoutes(context, { shutdownSignal: shutdown.signal, isReady: readiness.check })(router);
      options.extraServices?.routes(router);
    },
    readMaxBytes: config.maxRequestBytes,
    // Browsers always see the seed's envelope: `success`, empty lists, zeros and false included.
    jsonOptions: { alwaysEmitImplicit: true, registry: options.extraServices?.registry },
    // Outermost first. Logging and metrics see every call as its caller does, so they sit outside
    // the conversion of errors to the codes callers receive.
    interceptors: [
      createLoggingInterceptor({ logger }),
      metrics.interceptor,
      createErrorInterceptor(createUnexpectedErrorLogger(logger)),
    ],
    fallback(req, res) {
      if (probes(req, res) || metricsEndpoint(req, res)) return;
      answerUnknownRoute(req, res);
    },
  });
  const dual = createDualProtocolServer({
    handler(req, res) {
      if (cors(req, res)) return;
      drainUnreadBody(req);
      connect(req, res);
    },
  });

  return {
    listen() {
      return new Promise((resolve, reject) => {
        dual.server.once("error", reject);
        dual.server.listen(config.port, config.host, () => {
          dual.server.off("error", reject);
          resolve(dual.server.address() as AddressInfo);
        });
      });
    },
    async close() {
      // Readiness and health turn NOT_SERVING, and health watches end, before the drain begins.
      shutdown.abort();
      await dual.close(config.shutdownTimeoutMs);
    },
  };
}

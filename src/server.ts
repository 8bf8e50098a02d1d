import type { AddressInfo } from "node:net";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { AgentService } from "../gen/agent/v1/agent_pb.ts";
import { TokenService } from "../gen/token/v1/token_pb.ts";
import type { AppContext } from "./app-context.ts";
import { createCorsHandler } from "./http/cors.ts";
import { createDualProtocolServer } from "./http/dual-protocol-server.ts";
import { createProbeHandler } from "./http/probes.ts";
import { createAgentService } from "./rpc/agent-service.ts";
import { createErrorInterceptor } from "./rpc/connect-error-from.ts";
import { createTokenService } from "./rpc/token-service.ts";

export interface Server {
  /** Starts listening on the configured host and port (port 0: any free port). */
  listen(): Promise<AddressInfo>;
  /** Stops accepting, lets calls in flight finish within the shutdown timeout, then closes. */
  close(): Promise<void>;
}

/**
 * Builds the server without listening, so tests start it on port 0 and `main.ts` on PORT. Every
 * RPC is served over the Connect protocol (JSON and binary, GET for side-effect-free methods),
 * gRPC and gRPC-Web, on HTTP/1.1 and h2c alike.
 */
export function build(context: AppContext): Server {
  const { config, logger } = context;
  let shuttingDown = false;
  const cors = createCorsHandler({ origins: config.corsOrigins });
  const probes = createProbeHandler({ isReady: async () => !shuttingDown && (await context.isReady()) });
  const connect = connectNodeAdapter({
    routes(router) {
      router.service(TokenService, createTokenService({ queries: context.tokens }));
      router.service(AgentService, createAgentService({ commands: context.agents }));
    },
    readMaxBytes: config.maxRequestBytes,
    // Browsers always see the seed's envelope: `success`, empty lists, zeros and false included.
    jsonOptions: { alwaysEmitImplicit: true },
    interceptors: [
      createErrorInterceptor((error, procedure) => logger.error({ err: error, procedure }, "call failed")),
    ],
    fallback(req, res) {
      if (probes(req, res)) return;
      res.statusCode = 404;
      res.setHeader("content-type", "application/json");
      res.end(JSON.stringify({ code: "not_found", message: `no route for ${req.method} ${req.url}` }));
    },
  });
  const dual = createDualProtocolServer({
    handler(req, res) {
      if (cors(req, res)) return;
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
      shuttingDown = true;
      await dual.close(config.shutdownTimeoutMs);
    },
  };
}

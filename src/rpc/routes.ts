import type { ConnectRouter } from "@connectrpc/connect";
import { AgentService } from "../../gen/agent/v1/agent_pb.ts";
import { ApiKeyService } from "../../gen/auth/v1/auth_pb.ts";
import { file_google_rpc_error_details } from "../../gen/google/rpc/error_details_pb.ts";
import { ServerReflection as ServerReflectionV1 } from "../../gen/grpc/reflection/v1/reflection_pb.ts";
import { ServerReflection as ServerReflectionV1alpha } from "../../gen/grpc/reflection/v1alpha/reflection_pb.ts";
import { Health } from "../../gen/health/v1/health_pb.ts";
import { TokenService } from "../../gen/token/v1/token_pb.ts";
import { WebhookService } from "../../gen/webhook/v1/webhook_pb.ts";
import type { AppContext } from "../app-context.ts";
import type { AgentEventWatch } from "../events/agent-event-watch.ts";
import type { PriceWatch } from "../token/price-watch.ts";
import { createAgentService } from "./agent-service.ts";
import { createApiKeyService } from "./api-key-service.ts";
import { createHealthService } from "./health-service.ts";
import type { ReadinessPoller } from "./readiness-poller.ts";
import { createReflectionServices } from "./reflection-service.ts";
import type { StreamSettings } from "./server-stream.ts";
import { createTokenService } from "./token-service.ts";
import { createWebhookService } from "./webhook-service.ts";

/**
 * Every service the server answers: the contract's two, webhooks, API keys, gRPC health checking and server
 * reflection. `shutdownSignal` aborts when the server begins to drain (health turns NOT_SERVING);
 * `chain` and `store` say whether the dependencies of TokenService and AgentService answer.
 */
export function createRoutes(
  context: AppContext,
  options: {
    shutdownSignal: AbortSignal;
    chain: ReadinessPoller;
    store: ReadinessPoller;
    /** What the server streams share, and what they watch. */
    streams: StreamSettings;
    agentEvents: AgentEventWatch;
    priceWatch: PriceWatch;
  },
): (router: ConnectRouter) => void {
  const { streams } = options;
  return (router) => {
    router.service(
      TokenService,
      createTokenService({ queries: context.tokens, priceWatch: options.priceWatch, streams }),
    );
    router.service(
      AgentService,
      createAgentService({ commands: context.agents, events: options.agentEvents, streams }),
    );
    router.service(ApiKeyService, createApiKeyService({ keys: context.apiKeys }));
    router.service(WebhookService, createWebhookService({ endpoints: context.webhooks }));
    router.service(
      Health,
      createHealthService({
        // Token calls need the chain, agent calls the store: each keeps serving while the other's
        // dependency is down.
        services: {
          [TokenService.typeName]: options.chain,
          [AgentService.typeName]: options.store,
          [WebhookService.typeName]: options.store,
        },
        shutdownSignal: options.shutdownSignal,
      }),
    );
    const reflection = createReflectionServices({
      services: [TokenService, AgentService, WebhookService, ApiKeyService, Health],
      // invalid_argument errors carry a google.rpc.BadRequest; tools decode it with this file.
      files: [file_google_rpc_error_details],
    });
    router.service(ServerReflectionV1, reflection.v1);
    router.service(ServerReflectionV1alpha, reflection.v1alpha);
  };
}

import { readFileSync } from "node:fs";
import { type DescService, getOption, hasOption } from "@bufbuild/protobuf";
import { Validator } from "@seriousme/openapi-schema-validator";
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AgentService } from "../gen/agent/v1/agent_pb.ts";
import { ApiKeyService } from "../gen/auth/v1/auth_pb.ts";
import { http } from "../gen/google/api/annotations_pb.ts";
import { TokenService } from "../gen/token/v1/token_pb.ts";
import { WebhookService } from "../gen/webhook/v1/webhook_pb.ts";
import { ADMIN_OWNER } from "../src/auth/api-keys.ts";
import { localKey } from "../src/local-chain/index.ts";
import { restBindingsOf } from "../src/rest/rest-bindings.ts";
import { loadCatalog } from "../src/token/catalog.ts";
import { type RunningServer, startServer } from "./support/start-server.ts";

/*
 * The OpenAPI document generated from the protos (gen/openapi/openapi.json): valid OpenAPI 3.1 by
 * an established validator, served at /openapi.json, in step with the routes the server builds
 * from the same rules, and true: every documented operation is called on the live server, and
 * each answer, success and error, is checked against the document's schema.
 */

type Json = Record<string, unknown>;
const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;
const file = new URL("../gen/openapi/openapi.json", import.meta.url);
const document = JSON.parse(readFileSync(file, "utf8")) as {
  paths: Record<string, Record<string, Json>>;
  components: { schemas: Record<string, Json> };
};
const SERVICES: DescService[] = [TokenService, AgentService, ApiKeyService, WebhookService];
/** Every sample call is made with the bootstrap admin key, which has every scope. */
const ADMIN_KEY = "openapi-test-admin-key-0123456789abcdef";
const AUTHORIZATION = { authorization: `Bearer ${ADMIN_KEY}` };
const sol = loadCatalog().tokens[0] as { mint: string };
const TRANSFER = {
  // A seeded wallet: it holds every catalog token, so PrepareApproval has a token account to name.
  source: localKey("wallet 1").address,
  destination: "2ojv9BAiHUrvsm9gxDe7fJSzbNZSJcxZvf8dqmWGHG8S",
  amount: 1.5,
  token: "USDC",
  schedule: "daily",
};

/** The delivery the resend sample resends. */
const DELIVERY_ID = "msg_docs_1";

/** One call that succeeds and one that fails, per operation, in the order they run. */
interface Sample {
  /** The path, given the agent and the webhook endpoint the samples made. */
  path: (agentId: string, endpointId: string) => string;
  body?: unknown;
  /** The status the failing call gets: from a bad parameter, a bad body or an unknown thing. */
  error: { path: string; body?: unknown; status: number };
  /** Waits until the success call can succeed (the agent active, say). */
  ready?: (baseUrl: string, agentId: string, endpointId: string) => Promise<void>;
  /** A server stream: its success is an event stream, whose first event's data is this message. */
  stream?: string;
}

/** Waits until the scheduler has activated the agent. */
async function untilActive(baseUrl: string, agentId: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    const json = (await (
      await fetch(`${baseUrl}/v1/agents/${agentId}`, { headers: AUTHORIZATION })
    ).json()) as {
      data: { status: string };
    };
    if (json.data.status === "active") return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`agent ${agentId} never became active`);
}
const SAMPLES: Record<string, Sample> = {
  TokenService_WatchTokenPrices: {
    path: () => `/v1/tokens/prices:watch?mints=${sol.mint}`,
    error: { path: "/v1/tokens/prices:watch?mints=nope", status: 400 },
    stream: "token.v1.WatchTokenPricesResponse",
  },
  TokenService_GetTokenPrices: {
    path: () => `/v1/tokens/prices?symbol=sol`,
    error: { path: "/v1/tokens/prices?mint=nope", status: 400 },
  },
  TokenService_GetTokenMetadata: {
    path: () => `/v1/tokens/${sol.mint}/metadata`,
    error: { path: `/v1/tokens/${TRANSFER.source}/metadata`, status: 404 },
  },
  TokenService_GetTokenTransactions: {
    path: () => `/v1/tokens/${sol.mint}/transactions?limit=2`,
    error: { path: `/v1/tokens/${sol.mint}/transactions?limit=abc`, status: 400 },
  },
  AgentService_CreateAgent: {
    path: () => "/v1/agents",
    body: { type: "transfer", config: TRANSFER },
    error: {
      path: "/v1/agents",
      body: { type: "transfer", config: { ...TRANSFER, amount: -1 } },
      status: 400,
    },
  },
  AgentService_GetAgent: {
    path: (id) => `/v1/agents/${id}`,
    error: { path: "/v1/agents/nope", status: 404 },
  },
  AgentService_ListAgents: {
    path: () => "/v1/agents?type=transfer&limit=5",
    error: { path: "/v1/agents?status=sleeping", status: 400 },
  },
  AgentService_ListAgentRuns: {
    path: (id) => `/v1/agents/${id}/runs?limit=5`,
    error: { path: "/v1/agents/x/runs?limit=500", status: 400 },
  },
  AgentService_GetExecutor: {
    path: () => "/v1/executor",
    error: { path: "/v1/executor?address=x", status: 400 },
  },
  AgentService_PrepareApproval: {
    path: (id) => `/v1/agents/${id}:prepareApproval`,
    body: { allowance: 2.5 },
    error: { path: "/v1/agents/noSuchAgent0000000000a:prepareApproval", body: { allowance: 1 }, status: 404 },
  },
  AgentService_PauseAgent: {
    path: (id) => `/v1/agents/${id}:pause`,
    body: {},
    ready: untilActive,
    error: { path: "/v1/agents/noSuchAgent0000000000a:pause", body: {}, status: 404 },
  },
  AgentService_ResumeAgent: {
    path: (id) => `/v1/agents/${id}:resume`,
    body: {},
    error: { path: "/v1/agents/noSuchAgent0000000000a:resume", body: {}, status: 404 },
  },
  AgentService_DeleteAgent: {
    path: (id) => `/v1/agents/${id}`,
    error: { path: "/v1/agents/x?force=true", status: 400 },
  },
  ApiKeyService_CreateApiKey: {
    path: () => "/v1/apikeys",
    body: { owner: "docs", scopes: ["agents:read"] },
    error: { path: "/v1/apikeys", body: { owner: "", scopes: [] }, status: 400 },
  },
  ApiKeyService_ListApiKeys: {
    path: () => "/v1/apikeys?owner=docs",
    error: { path: "/v1/apikeys?limit=500", status: 400 },
  },
  ApiKeyService_RevokeApiKey: {
    path: () => "/v1/apikeys/noSuchKey:revoke",
    body: {},
    error: { path: `/v1/apikeys/${"k".repeat(65)}:revoke`, body: {}, status: 400 },
  },
  WebhookService_CreateWebhookEndpoint: {
    path: () => "/v1/webhooks/endpoints",
    body: { url: "https://example.com/hooks", eventTypes: ["agent.created"], description: "docs" },
    error: { path: "/v1/webhooks/endpoints", body: { url: "http://example.com/hooks" }, status: 400 },
  },
  WebhookService_ListWebhookEndpoints: {
    path: () => "/v1/webhooks/endpoints?limit=5",
    error: { path: "/v1/webhooks/endpoints?limit=500", status: 400 },
  },
  WebhookService_RotateWebhookSecret: {
    path: (_, endpointId) => `/v1/webhooks/endpoints/${endpointId}:rotateSecret`,
    body: {},
    error: { path: "/v1/webhooks/endpoints/ep_none:rotateSecret", body: {}, status: 404 },
  },
  WebhookService_ResendWebhookDelivery: {
    path: (_, endpointId) => `/v1/webhooks/endpoints/${endpointId}/deliveries/${DELIVERY_ID}:resend`,
    body: {},
    error: { path: "/v1/webhooks/endpoints/ep_none/deliveries/msg_none_1:resend", body: {}, status: 404 },
    // A delivery to resend, put straight into the outbox (this server delivers nothing).
    ready: async (_baseUrl, _agentId, endpointId) => {
      const at = new Date();
      await server.context.webhookStore.enqueue([
        {
          deliveryId: DELIVERY_ID,
          endpointId,
          owner: ADMIN_OWNER,
          eventSeq: 1,
          eventType: "agent.created",
          eventAt: at,
          payload: "{}",
          createdAt: at,
          status: "failed",
          attempts: 3,
          lastResponseCode: 500,
          lastAttemptAt: at,
          windowStart: at,
        },
      ]);
    },
  },
  WebhookService_ListWebhookDeliveries: {
    path: (_, endpointId) => `/v1/webhooks/endpoints/${endpointId}/deliveries?status=pending`,
    error: { path: "/v1/webhooks/endpoints/ep_none/deliveries?status=lost", status: 400 },
  },
  WebhookService_DeleteWebhookEndpoint: {
    path: (_, endpointId) => `/v1/webhooks/endpoints/${endpointId}`,
    error: { path: "/v1/webhooks/endpoints/x?force=true", status: 400 },
  },
  // Last: by now the agents above have events (created, deleted).
  AgentService_WatchAgentEvents: {
    path: () => "/v1/agents/events:watch?after=0",
    error: { path: "/v1/agents/events:watch?after=-1", status: 400 },
    stream: "agent.v1.WatchAgentEventsResponse",
  },
};

let server: RunningServer;
beforeAll(async () => {
  // The scheduler activates the sample agent, so that pausing and resuming it succeed.
  server = await startServer({
    env: {
      // The samples' transfer agent must become active without a wallet's approval on the chain.
      TRANSFER_EXECUTOR: "simulated",
      SCHEDULER_ENABLED: "true",
      SCHEDULER_POLL_INTERVAL_MS: "20",
      AUTH_MODE: "apikey",
      ADMIN_API_KEY: ADMIN_KEY,
    },
  });
});
afterAll(async () => server?.close());

describe("the OpenAPI document", () => {
  it("is valid OpenAPI 3.1", async () => {
    const validator = new Validator();
    const result = await validator.validate(structuredClone(document));
    expect(result.errors).toBeUndefined();
    expect(result.valid).toBe(true);
    expect(validator.version).toBe("3.1");
  });

  it("is served at /openapi.json as committed", async () => {
    const response = await fetch(`${server.baseUrl}/openapi.json`);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("application/json");
    expect(await response.text()).toBe(readFileSync(file, "utf8"));
    const etag = response.headers.get("etag") as string;
    const again = await fetch(`${server.baseUrl}/openapi.json`, { headers: { "if-none-match": etag } });
    expect(again.status).toBe(304);
  });

  it("documents exactly the REST routes the server builds from the same rules", () => {
    const routes = SERVICES.flatMap((service) =>
      service.methods
        .filter((m) => hasOption(m, http))
        .flatMap((m) => restBindingsOf(m, getOption(m, http)))
        .map((b) => `${b.httpMethod} ${b.path.openApiPath} ${b.method.parent.name}_${b.method.name}`),
    );
    const documented = Object.entries(document.paths).flatMap(([path, ops]) =>
      Object.entries(ops).map(([verb, op]) => `${verb.toUpperCase()} ${path} ${op.operationId}`),
    );
    expect(documented.sort()).toEqual(routes.sort());
    // Every method is served; WatchAgentEvents on two paths (all agents, one agent).
    expect(new Set(routes.map((r) => r.split(" ")[2])).size).toBe(SERVICES.flatMap((s) => s.methods).length);
  });

  it("carries the proto comments as descriptions", () => {
    const op = document.paths["/v1/tokens/{mint}/transactions"]?.get as Json;
    expect(op.description).toBe(
      "GetTokenTransactions returns a token's transactions (those that name its mint), newest first\nin the chain's order, a page at a time.",
    );
    const limit = (op.parameters as Json[]).find((p) => p.name === "limit");
    expect(limit).toMatchObject({
      in: "query",
      description: "Number of transactions to return: 0 (omitted) means 10; at most 100.",
      schema: { type: "integer", format: "int32" },
    });
    const agent = document.components.schemas["agent.v1.Agent"] as { properties: Record<string, Json> };
    expect(agent.properties.createdAt).toEqual({
      type: "string",
      format: "date-time",
      description: "When the agent was created.",
    });
    expect(agent.properties.config).toMatchObject({ type: "object", additionalProperties: true });
  });
});

describe("/docs", () => {
  it("serves its page and Swagger UI's files with their types and caching, and nothing else", async () => {
    const page = await fetch(`${server.baseUrl}/docs`);
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(page.headers.get("cache-control")).toBe("no-cache");
    expect(page.headers.get("content-security-policy")).toContain("script-src 'self'");
    const html = await page.text();
    const assets = [...html.matchAll(/(?:href|src)="([^"]+)"/g)].map((m) => m[1] as string);
    expect(assets.length).toBe(4);
    const types: Record<string, string> = {
      css: "text/css; charset=utf-8",
      js: "text/javascript; charset=utf-8",
      png: "image/png",
    };
    for (const asset of assets) {
      const response = await fetch(new URL(asset, `${server.baseUrl}/docs`), {
        headers: { "accept-encoding": "gzip" },
      });
      expect(response.status, asset).toBe(200);
      expect(response.headers.get("content-type"), asset).toBe(types[asset.split(".").pop() as string]);
      // Swagger UI's files sit under its version: cached for good. The page's own script is revalidated.
      const immutable = asset.includes("/swagger-ui/");
      expect(response.headers.get("cache-control"), asset).toBe(
        immutable ? "public, max-age=31536000, immutable" : "no-cache",
      );
      expect((await response.arrayBuffer()).byteLength, asset).toBeGreaterThan(0);
    }
    for (const path of [
      "/docs/swagger-ui/0.0.0/swagger-ui.css",
      "/docs/swagger-ui/5.35.0/package.json",
      "/docs/x",
    ])
      expect((await fetch(`${server.baseUrl}${path}`)).status, path).toBe(404);
  });
});

describe("every documented operation answers as documented", () => {
  const ajv = addFormats(new Ajv2020({ allErrors: true, strict: true, allowUnionTypes: true }));
  // The document's references point at #/components/schemas; give ajv those as one schema's $defs.
  const defs = JSON.parse(
    JSON.stringify(document.components.schemas).replaceAll("#/components/schemas/", "doc#/$defs/"),
  );
  ajv.addSchema({ $id: "doc", $defs: defs });
  const schemaOf = (op: Json, status: string): Json => {
    const responses = op.responses as Record<string, { content: Record<string, { schema: Json }> }>;
    const schema = (responses[status] ?? responses.default)?.content["application/json"]?.schema as Json;
    return JSON.parse(JSON.stringify(schema).replaceAll("#/components/schemas/", "doc#/$defs/"));
  };

  /** The data of the first event of an event stream (the stream is then cancelled). */
  async function firstEventData(response: Response): Promise<Json> {
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    let text = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) throw new Error("the stream ended before its first event");
      text += decoder.decode(value, { stream: true });
      const line = text.split("\n").find((l) => l.startsWith("data: ") && text.includes(`${l}\n\n`));
      if (line !== undefined) {
        await reader.cancel();
        return JSON.parse(line.slice("data: ".length)) as Json;
      }
    }
  }

  it("has a sample for every operation", () => {
    const ids = Object.values(document.paths).flatMap((ops) =>
      Object.values(ops).map((op) => op.operationId),
    );
    expect([...new Set(ids)].sort()).toEqual(Object.keys(SAMPLES).sort());
  });

  it("success and error answers match the response schemas", async () => {
    const operations = new Map(
      Object.entries(document.paths).flatMap(([, ops]) =>
        Object.entries(ops).map(([verb, op]) => [op.operationId as string, { verb, op }] as const),
      ),
    );
    let agentId = "";
    let endpointId = "";
    for (const [id, sample] of Object.entries(SAMPLES)) {
      const { verb, op } = operations.get(id) as { verb: string; op: Json };
      await sample.ready?.(server.baseUrl, agentId, endpointId);
      for (const [path, body, expected] of [
        [sample.path(agentId, endpointId), sample.body, 200],
        [sample.error.path, sample.error.body, sample.error.status],
      ] as const) {
        const response = await fetch(`${server.baseUrl}${path}`, {
          method: verb.toUpperCase(),
          ...(body === undefined
            ? { headers: AUTHORIZATION }
            : {
                body: JSON.stringify(body),
                headers: { ...AUTHORIZATION, "content-type": "application/json" },
              }),
        });
        expect(response.status, `${id} ${path}`).toBe(expected);
        if (sample.stream !== undefined && expected === 200) {
          expect(response.headers.get("content-type")).toMatch(/^text\/event-stream/);
          const data = await firstEventData(response);
          const validate = ajv.compile({ $ref: `doc#/$defs/${sample.stream}` });
          expect(validate(data) ? [] : validate.errors, `${id} ${path}: ${JSON.stringify(data)}`).toEqual([]);
          continue;
        }
        const json = (await response.json()) as Json;
        const validate = ajv.compile(schemaOf(op, String(response.status)));
        expect(validate(json) ? [] : validate.errors, `${id} ${path}: ${JSON.stringify(json)}`).toEqual([]);
        if (id === "AgentService_CreateAgent" && expected === 200)
          agentId = (json.data as Json).agentId as string;
        if (id === "WebhookService_CreateWebhookEndpoint" && expected === 200)
          endpointId = (json.data as Json).endpointId as string;
      }
    }
    expect(agentId).not.toBe("");
  });

  it("the schemas are strict enough to catch a wrong answer", () => {
    const op = document.paths["/v1/agents"]?.get as Json;
    const validate = ajv.compile(schemaOf(op, "200"));
    const page = { agents: [], total: 0, limit: 10, offset: 0 };
    expect(validate({ success: true, data: page })).toBe(true);
    expect(validate({ success: true, data: { ...page, total: "0" } })).toBe(false);
    expect(validate({ success: true, data: { agents: [], limit: 10, offset: 0 } })).toBe(false);
    expect(validate({ success: true, data: page, extra: 1 })).toBe(false);
  });
});

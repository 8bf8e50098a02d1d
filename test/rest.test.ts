import * as http2 from "node:http2";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadCatalog } from "../src/token/catalog.ts";
import { createCatalogPriceSource } from "../src/token/catalog-price-source.ts";
import { type RunningServer, startServer } from "./support/start-server.ts";

/*
 * The REST paths of the contract's google.api.http rules, on the real server with plain fetch:
 * answers identical to Connect's, path and query mapped into the request (typed), the body as the
 * rule says, errors as Connect error JSON, and the same interceptors (request ids, logs, metrics)
 * and limits as every other protocol.
 */

const catalog = loadCatalog();
const sol = catalog.tokens[0] as (typeof catalog.tokens)[number];
const TRANSFER = {
  source: "9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM",
  destination: "2ojv9BAiHUrvsm9gxDe7fJSzbNZSJcxZvf8dqmWGHG8S",
  amount: 1.5,
  token: "USDC",
  schedule: "daily",
};
const ORIGIN = "https://app.example.com";

let server: RunningServer;
beforeAll(async () => {
  server = await startServer({
    env: { CORS_ORIGINS: ORIGIN, MAX_REQUEST_BYTES: "4096" },
    // The catalog's snapshot: answers of the two paths are compared as text, and the embedded
    // chain's pool prices carry the time each reading of the pools was made.
    overrides: { prices: createCatalogPriceSource({ catalog }) },
  });
});
afterAll(async () => server?.close());

async function rest(
  method: string,
  path: string,
  init: { body?: string; headers?: Record<string, string> } = {},
) {
  const response = await fetch(`${server.baseUrl}${path}`, { method, ...init });
  const text = await response.text();
  return { status: response.status, headers: response.headers, text, json: JSON.parse(text || "null") };
}

async function connect(procedure: string, body: unknown) {
  const response = await fetch(`${server.baseUrl}/${procedure}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: response.status, text: await response.text() };
}

function violations(json: { details?: { type: string; debug?: { fieldViolations?: unknown[] } }[] }) {
  return (json.details ?? [])
    .filter((d) => d.type === "google.rpc.BadRequest")
    .flatMap((d) => d.debug?.fieldViolations ?? []);
}

describe("token REST paths answer exactly what Connect answers", () => {
  it("GET /v1/tokens/prices with and without filters", async () => {
    for (const [query, request] of [
      ["", {}],
      ["?symbol=sol", { symbol: "sol" }],
      [`?mint=${sol.mint}&symbol=SOL`, { mint: sol.mint, symbol: "SOL" }],
      ["?symbol=NOPE", { symbol: "NOPE" }],
    ] as const) {
      const got = await rest("GET", `/v1/tokens/prices${query}`);
      const want = await connect("token.v1.TokenService/GetTokenPrices", request);
      // An unknown symbol is not_found, on both.
      expect(got.status, query).toBe(query === "?symbol=NOPE" ? 404 : 200);
      expect(got.headers.get("content-type")).toBe("application/json");
      expect(got.text, query).toBe(want.text);
    }
    expect((await rest("GET", "/v1/tokens/prices?symbol=sol")).json.data).toHaveLength(1);
  });

  it("GET /v1/tokens/{mint}/metadata binds the mint from the path", async () => {
    const got = await rest("GET", `/v1/tokens/${sol.mint}/metadata`);
    expect(got.status).toBe(200);
    expect(got.text).toBe((await connect("token.v1.TokenService/GetTokenMetadata", { mint: sol.mint })).text);
    expect(got.json.data.symbol).toBe(sol.symbol);
  });

  it("GET /v1/tokens/{mint}/transactions with limit and before", async () => {
    const first = await rest("GET", `/v1/tokens/${sol.mint}/transactions?limit=3`);
    expect(first.status).toBe(200);
    expect(first.json.data).toHaveLength(3);
    const before = first.json.data[2].signature as string;
    const next = await rest("GET", `/v1/tokens/${sol.mint}/transactions?limit=2&before=${before}`);
    const want = await connect("token.v1.TokenService/GetTokenTransactions", {
      mint: sol.mint,
      limit: 2,
      before,
    });
    expect(next.text).toBe(want.text);
  });

  it("the service's own rules and codes apply: limit out of range, unknown and malformed mints", async () => {
    const range = await rest("GET", `/v1/tokens/${sol.mint}/transactions?limit=500`);
    expect(range.status).toBe(400);
    expect(range.json.code).toBe("invalid_argument");
    expect(range.text).toBe(
      (await connect("token.v1.TokenService/GetTokenTransactions", { mint: sol.mint, limit: 500 })).text,
    );
    const unknown = await rest("GET", "/v1/tokens/9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM/metadata");
    expect(unknown.status).toBe(404);
    expect(unknown.json.code).toBe("not_found");
    const malformed = await rest("GET", "/v1/tokens/not-a-mint/metadata");
    expect(malformed.status).toBe(400);
    expect(violations(malformed.json)).toEqual([expect.objectContaining({ field: "mint" })]);
  });
});

describe("REST over HTTP/2 (h2c)", () => {
  it("answers as over HTTP/1.1", async () => {
    const session = http2.connect(server.baseUrl);
    try {
      const { status, text } = await new Promise<{ status: number; text: string }>((resolve, reject) => {
        const req = session.request({ ":method": "GET", ":path": "/v1/tokens/prices?symbol=usdc" });
        let status = 0;
        let text = "";
        req.on("response", (headers) => {
          status = Number(headers[":status"]);
        });
        req.setEncoding("utf8");
        req.on("data", (chunk: string) => {
          text += chunk;
        });
        req.on("end", () => resolve({ status, text }));
        req.on("error", reject);
      });
      expect(status).toBe(200);
      expect(text).toBe((await connect("token.v1.TokenService/GetTokenPrices", { symbol: "usdc" })).text);
    } finally {
      session.close();
    }
  });
});

describe("URL values are typed by the request's fields", () => {
  it("a value of the wrong type is invalid_argument naming the parameter", async () => {
    const got = await rest("GET", `/v1/tokens/${sol.mint}/transactions?limit=abc`);
    expect(got.status).toBe(400);
    expect(got.headers.get("content-type")).toBe("application/json");
    expect(got.json.code).toBe("invalid_argument");
    // The paging rule, not the bounds of the int32 the field is.
    expect(got.json.message).toBe("limit must be an integer from 1 to 100 (0 or omitted means 10)");
    expect(violations(got.json)).toEqual([{ field: "limit", description: expect.stringMatching(/integer/) }]);
    const offset = await rest("GET", "/v1/agents?offset=x");
    expect(offset.json.message).toBe("offset must be an integer from -2147483648 to 2147483647");
    for (const bad of ["1.5", "", "99999999999", "0x10"]) {
      const again = await rest("GET", `/v1/agents?limit=${bad}`);
      expect(again.status, bad).toBe(400);
      expect(violations(again.json), bad).toEqual([expect.objectContaining({ field: "limit" })]);
    }
  });

  it("unknown and repeated parameters are named; proto names are accepted beside JSON names", async () => {
    const unknown = await rest("GET", "/v1/tokens/prices?symbl=sol");
    expect(unknown.status).toBe(400);
    expect(violations(unknown.json)).toEqual([expect.objectContaining({ field: "symbl" })]);
    const twice = await rest("GET", `/v1/agents?limit=1&limit=2`);
    expect(violations(twice.json)).toEqual([expect.objectContaining({ field: "limit" })]);
    const both = await rest("GET", "/v1/agents?limit=abc&offset=-x");
    expect(violations(both.json).map((v) => (v as { field: string }).field)).toEqual(["limit", "offset"]);
  });

  it("percent-encoded values are decoded", async () => {
    const got = await rest("GET", `/v1/tokens/prices?symbol=%53OL`);
    expect(got.json.data.map((d: { symbol: string }) => d.symbol)).toEqual(["SOL"]);
  });
});

describe("agent REST paths", () => {
  it("create (body *), get, list, delete, with the caller's headers passed through", async () => {
    const headers = { "content-type": "application/json", "idempotency-key": `rest-${Date.now()}` };
    const body = JSON.stringify({ type: "transfer", config: TRANSFER });
    const created = await rest("POST", "/v1/agents", { body, headers });
    expect(created.status).toBe(200);
    expect(created.json).toMatchObject({ success: true, data: { status: "pending" } });
    const id = created.json.data.agentId as string;
    // The idempotency key reached the service: the retry answers the first agent.
    const retried = await rest("POST", "/v1/agents", { body, headers });
    expect(retried.json.data.agentId).toBe(id);

    const got = await rest("GET", `/v1/agents/${id}`);
    expect(got.json).toMatchObject({
      success: true,
      data: { agentId: id, type: "transfer", config: TRANSFER },
    });
    const listed = await rest("GET", "/v1/agents?type=transfer&limit=1&offset=0");
    expect(listed.json.data).toMatchObject({ limit: 1, offset: 0, agents: [{ agentId: id }] });
    expect((await rest("GET", "/v1/agents?type=swap")).json.data.agents).toEqual([]);

    expect((await rest("DELETE", `/v1/agents/${id}`)).json).toEqual({
      success: true,
      data: { deleted: true },
    });
    expect((await rest("DELETE", `/v1/agents/${id}`)).json).toEqual({
      success: true,
      data: { deleted: false },
    });
    const gone = await rest("GET", `/v1/agents/${id}`);
    expect(gone.status).toBe(404);
    expect(gone.json.code).toBe("not_found");
  });

  it("bodies: validation errors, bad JSON, a wrong content type, unknown members", async () => {
    const json = { "content-type": "application/json" };
    const invalid = await rest("POST", "/v1/agents", {
      body: JSON.stringify({ type: "nope", config: {} }),
      headers: json,
    });
    expect(invalid.status).toBe(400);
    expect(violations(invalid.json)).toContainEqual(expect.objectContaining({ field: "type" }));
    const broken = await rest("POST", "/v1/agents", { body: "{", headers: json });
    expect(broken.status).toBe(400);
    expect(broken.json.code).toBe("invalid_argument");
    const text = await rest("POST", "/v1/agents", { body: "{}", headers: { "content-type": "text/plain" } });
    expect(text.status).toBe(400);
    expect(text.json.message).toContain("content-type");
    const extra = await rest("POST", "/v1/agents", {
      body: JSON.stringify({ colour: "red" }),
      headers: json,
    });
    expect(extra.status).toBe(400);
    expect(extra.json.code).toBe("invalid_argument");
  });

  it("a body over MAX_REQUEST_BYTES is resource_exhausted", async () => {
    const body = JSON.stringify({ type: "transfer", config: { ...TRANSFER, pad: "x".repeat(5000) } });
    const got = await rest("POST", "/v1/agents", { body, headers: { "content-type": "application/json" } });
    expect(got.json.code).toBe("resource_exhausted");
    expect(got.status).toBe(429);
  });

  it("a path served for other methods answers 405 with Allow; other paths fall through to 404", async () => {
    const put = await rest("PUT", "/v1/agents/abc");
    expect(put.status).toBe(405);
    expect(put.headers.get("allow")).toBe("GET, DELETE");
    expect((await rest("GET", "/v1/agents/abc/extra")).status).toBe(404);
    expect((await rest("GET", "/v1/agents/")).status).toBe(404);
  });
});

describe("the same interceptors and CORS apply", () => {
  it("request ids are echoed, and calls are logged and counted as rest+json", async () => {
    const got = await rest("GET", "/v1/tokens/prices?symbol=usdc", {
      headers: { "x-request-id": "rest-req-1" },
    });
    expect(got.headers.get("x-request-id")).toBe("rest-req-1");
    const failed = await rest("GET", "/v1/agents/unknown-agent", {
      headers: { "x-request-id": "rest-req-2" },
    });
    expect(failed.headers.get("x-request-id")).toBe("rest-req-2");
    expect(server.logs).toContainEqual(
      expect.objectContaining({
        procedure: "/token.v1.TokenService/GetTokenPrices",
        protocol: "rest+json",
        code: "ok",
        request_id: "rest-req-1",
      }),
    );
    expect(server.logs).toContainEqual(
      expect.objectContaining({
        procedure: "/agent.v1.AgentService/GetAgent",
        code: "not_found",
        request_id: "rest-req-2",
      }),
    );
    const metrics = await (await fetch(`${server.baseUrl}/metrics`)).text();
    expect(metrics).toMatch(
      /rpc_requests_total\{procedure="\/token\.v1\.TokenService\/GetTokenPrices",protocol="rest\+json",code="ok"\} [1-9]/,
    );
  });

  it("CORS preflight allows DELETE for a configured origin", async () => {
    const response = await fetch(`${server.baseUrl}/v1/agents/abc`, {
      method: "OPTIONS",
      headers: { origin: ORIGIN, "access-control-request-method": "DELETE" },
    });
    expect(response.status).toBe(204);
    expect(response.headers.get("access-control-allow-methods")).toContain("DELETE");
  });
});

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadCatalog } from "../src/token/catalog.ts";
import { type RunningServer, startServer } from "./support/start-server.ts";

/*
 * The exact JSON a browser or curl sees, with plain fetch: member names, JSON types, implicit
 * members always present, ISO 8601 UTC timestamps, and standard Connect error bodies.
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
const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?Z$/;

let server: RunningServer;
beforeAll(async () => {
  server = await startServer({ env: { CORS_ORIGINS: "https://app.example.com", MAX_REQUEST_BYTES: "4096" } });
});
afterAll(async () => server?.close());

async function post(path: string, body: unknown, headers: Record<string, string> = {}) {
  const response = await fetch(`${server.baseUrl}/${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
  return {
    status: response.status,
    headers: response.headers,
    json: (await response.json()) as Record<string, unknown>,
  };
}

describe("token JSON", () => {
  it("prices: envelope and members of each entry", async () => {
    const { status, json } = await post("token.v1.TokenService/GetTokenPrices", {});
    expect(status).toBe(200);
    expect(Object.keys(json)).toEqual(["success", "data"]);
    expect(json.success).toBe(true);
    const data = json.data as Record<string, unknown>[];
    expect(data.length).toBe(catalog.tokens.length);
    for (const entry of data) {
      expect(Object.keys(entry).sort()).toEqual([
        "asOf",
        "change24h",
        "mint",
        "price",
        "slot",
        "symbol",
        "unpriced",
      ]);
      expect(typeof entry.price).toBe("number");
      expect(typeof entry.change24h).toBe("number");
      // RFC 3339 in UTC, as proto3 JSON writes a Timestamp; a uint64 is a decimal string.
      expect(entry.asOf).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/);
      expect(entry.slot).toMatch(/^\d+$/);
      expect(entry.unpriced).toBe(false);
    }
  });

  it("prices: nothing matching is an empty array, not a missing member", async () => {
    // SOL's mint filtered by another symbol: nothing matches (an unknown symbol is not_found).
    const { json } = await post("token.v1.TokenService/GetTokenPrices", { mint: sol.mint, symbol: "USDC" });
    expect(json).toStrictEqual({ success: true, data: [] });
  });

  it("metadata over Connect GET: logoURI, a numeric decimals and a tags array", async () => {
    const message = encodeURIComponent(JSON.stringify({ mint: sol.mint }));
    const response = await fetch(
      `${server.baseUrl}/token.v1.TokenService/GetTokenMetadata?connect=v1&encoding=json&message=${message}`,
    );
    expect(response.status).toBe(200);
    const json = await response.json();
    expect(json).toStrictEqual({
      success: true,
      data: {
        mint: sol.mint,
        symbol: sol.symbol,
        name: sol.name,
        decimals: sol.decimals,
        logoURI: sol.logoURI,
        tags: [...sol.tags],
      },
    });
    expect(sol.logoURI).toMatch(/^https:\/\//);
  });

  it("transactions: blockTime and amount are JSON numbers", async () => {
    const { json } = await post("token.v1.TokenService/GetTokenTransactions", { mint: sol.mint, limit: 3 });
    const data = json.data as Record<string, unknown>[];
    expect(data).toHaveLength(3);
    for (const tx of data) {
      expect(Object.keys(tx).sort()).toEqual([
        "amount",
        "blockTime",
        "recipient",
        "sender",
        "signature",
        "type",
      ]);
      expect(typeof tx.blockTime).toBe("number");
      expect(Number.isInteger(tx.blockTime)).toBe(true);
      expect(typeof tx.amount).toBe("number");
    }
  });

  it("errors are standard Connect error bodies with BadRequest details", async () => {
    const { status, json } = await post("token.v1.TokenService/GetTokenTransactions", {
      mint: "x",
      limit: 101,
    });
    expect(status).toBe(400);
    expect(json.code).toBe("invalid_argument");
    expect(json.message).toContain("mint");
    expect(json.message).toContain("limit");
    const details = json.details as { type: string; value: string }[];
    expect(details.map((d) => d.type)).toEqual(["google.rpc.BadRequest"]);
    const notFound = await post("token.v1.TokenService/GetTokenMetadata", {
      mint: "11111111111111111111111111111111",
    });
    expect(notFound.status).toBe(404);
    expect(notFound.json.code).toBe("not_found");
  });

  it("a request over the size limit is refused without reaching the handler", async () => {
    const { status, json } = await post("token.v1.TokenService/GetTokenPrices", {
      symbol: "x".repeat(10_000),
    });
    expect(status).toBe(429);
    expect(json.code).toBe("resource_exhausted");
  });
});

describe("agent JSON", () => {
  it("create, detail, list and delete carry the seed's members", async () => {
    const created = await post("agent.v1.AgentService/CreateAgent", { type: "transfer", config: TRANSFER });
    expect(created.status).toBe(200);
    expect(Object.keys(created.json.data as object).sort()).toEqual(["agentId", "createdAt", "status"]);
    const { agentId, createdAt, status } = created.json.data as Record<string, string> & {
      createdAt: string;
    };
    expect(status).toBe("pending");
    expect(createdAt).toMatch(ISO_UTC);

    const detail = await post("agent.v1.AgentService/GetAgent", { agentId });
    expect(detail.json).toStrictEqual({
      success: true,
      data: {
        agentId,
        type: "transfer",
        status: "pending",
        config: TRANSFER,
        createdAt,
        nextRunAt: new Date(Date.parse(createdAt) + 86_400_000).toISOString().replace(".000Z", "Z"),
        pendingReason: expect.stringMatching(/^waiting for an approval: the wallet /),
      },
    });

    const list = await post("agent.v1.AgentService/ListAgents", {});
    expect(list.json).toStrictEqual({
      success: true,
      data: {
        agents: [{ agentId, type: "transfer", status: "pending", createdAt }],
        total: 1,
        limit: 10,
        offset: 0,
      },
    });

    const deleted = await post("agent.v1.AgentService/DeleteAgent", { agentId });
    expect(deleted.json).toStrictEqual({ success: true, data: { deleted: true } });
    const again = await post("agent.v1.AgentService/DeleteAgent", { agentId });
    expect(again.json).toStrictEqual({ success: true, data: { deleted: false } });
    const empty = await post("agent.v1.AgentService/ListAgents", { offset: 0 });
    expect(empty.json).toStrictEqual({ success: true, data: { agents: [], total: 0, limit: 10, offset: 0 } });
  });
});

describe("plain HTTP", () => {
  it("liveness and readiness", async () => {
    const live = await fetch(`${server.baseUrl}/healthz`);
    expect(live.status).toBe(200);
    const ready = await fetch(`${server.baseUrl}/readyz`);
    expect(ready.status).toBe(200);
  });

  it("unknown paths are 404", async () => {
    const response = await fetch(`${server.baseUrl}/nope`);
    expect(response.status).toBe(404);
  });

  it("CORS preflight for an allowed origin lists Connect's headers", async () => {
    const response = await fetch(`${server.baseUrl}/token.v1.TokenService/GetTokenPrices`, {
      method: "OPTIONS",
      headers: {
        origin: "https://app.example.com",
        "access-control-request-method": "POST",
        "access-control-request-headers": "content-type,connect-protocol-version",
      },
    });
    expect(response.status).toBe(204);
    expect(response.headers.get("access-control-allow-origin")).toBe("https://app.example.com");
    const allowed = (response.headers.get("access-control-allow-headers") ?? "").toLowerCase();
    for (const header of [
      "content-type",
      "connect-protocol-version",
      "grpc-timeout",
      "x-grpc-web",
      "idempotency-key",
    ]) {
      expect(allowed).toContain(header);
    }
    expect(response.headers.get("access-control-allow-methods")).toContain("POST");
  });

  it("CORS: an actual call exposes Connect's response headers; other origins get no grant", async () => {
    const allowed = await fetch(`${server.baseUrl}/token.v1.TokenService/GetTokenPrices`, {
      method: "POST",
      headers: { origin: "https://app.example.com", "content-type": "application/json" },
      body: "{}",
    });
    expect(allowed.headers.get("access-control-allow-origin")).toBe("https://app.example.com");
    expect((allowed.headers.get("access-control-expose-headers") ?? "").toLowerCase()).toContain(
      "grpc-status",
    );
    const other = await fetch(`${server.baseUrl}/token.v1.TokenService/GetTokenPrices`, {
      method: "POST",
      headers: { origin: "https://evil.example.com", "content-type": "application/json" },
      body: "{}",
    });
    expect(other.headers.get("access-control-allow-origin")).toBeNull();
  });
});

import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AgentService } from "../gen/agent/v1/agent_pb.ts";
import { BadRequestSchema } from "../gen/google/rpc/error_details_pb.ts";
import { TokenService } from "../gen/token/v1/token_pb.ts";
import { createMemoryAgentStore } from "../src/agent/memory-agent-store.ts";
import { InvalidArgumentError, NotFoundError, quote, UnavailableError } from "../src/domain/errors.ts";
import { connectErrorFrom } from "../src/rpc/connect-error-from.ts";
import { loadCatalog } from "../src/token/catalog.ts";
import { createCatalogPriceSource } from "../src/token/catalog-price-source.ts";
import { createProtocols, type Protocol } from "./support/callers.ts";
import { type RunningServer, startServer } from "./support/start-server.ts";

/*
 * Errors nobody planned for reach callers as a bare `internal`, with their text only in the log;
 * an unreachable dependency is `unavailable` with a safe message. The failures are injected through
 * the real ports (a token source and an agent store whose calls throw), not by mocking the server.
 */

const SECRET = "driver said: auth failed for mongodb://admin:hunter2@10.0.0.5 at /srv/app/db.js:42";

let server: RunningServer;
let protocols: Protocol[];

beforeAll(async () => {
  const catalog = createCatalogPriceSource({ catalog: loadCatalog() });
  const store = createMemoryAgentStore();
  server = await startServer({
    overrides: {
      prices: {
        watchlist: catalog.watchlist,
        pricesOf: async () => {
          throw new Error(SECRET);
        },
      },
      agentStore: {
        ...store,
        create: (a) => store.create(a),
        get: (o, id) => store.get(o, id),
        delete: (o, id) => store.delete(o, id),
        ping: () => store.ping(),
        close: () => store.close(),
        list: async () => {
          throw new UnavailableError("agent store is unavailable", { cause: new Error(SECRET) });
        },
      },
    },
  });
  protocols = createProtocols(server.baseUrl);
});

afterAll(async () => {
  for (const p of protocols ?? []) p.close();
  await server?.close();
});

describe.each(createProtocols("http://127.0.0.1:1").map((p) => p.name))("over %s", (name) => {
  const protocol = () => protocols.find((p) => p.name === name) as Protocol;

  it("an unexpected error is `internal` with no internal text", async () => {
    const outcome = await protocol().call(TokenService, "GetTokenPrices", {});
    expect(outcome).toMatchObject({ ok: false, code: Code.Internal, violations: [] });
    if (outcome.ok) return;
    expect(outcome.message).toBe("internal error");
  });

  it("an unavailable dependency is `unavailable` with a safe message", async () => {
    const outcome = await protocol().call(AgentService, "ListAgents", {});
    expect(outcome).toMatchObject({ ok: false, code: Code.Unavailable });
    if (outcome.ok) return;
    expect(outcome.message).toBe("agent store is unavailable");
  });
});

describe("the log", () => {
  it("keeps what the caller was not told, with the call's request id", async () => {
    const response = await fetch(`${server.baseUrl}/token.v1.TokenService/GetTokenPrices`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-request-id": "trace-me-123" },
      body: "{}",
    });
    expect(response.status).toBe(500);
    expect(await response.text()).not.toContain("hunter2");
    const line = server.logs.find((l) => l.request_id === "trace-me-123" && l.msg === "call failed");
    expect(line).toBeDefined();
    expect(JSON.stringify(line)).toContain("auth failed");
    // ...but never a password, even one quoted inside an error's text.
    expect(JSON.stringify(server.logs)).not.toContain("hunter2");
  });
});

describe("messages", () => {
  it("leave well-formed whatever a handler threw (gRPC percent-encodes them, and a lone surrogate throws there)", () => {
    const lone = "bad \ud800 text";
    const sink = () => {};
    const fromConnect = connectErrorFrom(new ConnectError(lone, Code.NotFound), "p", sink);
    expect(fromConnect.code).toBe(Code.NotFound);
    expect(fromConnect.rawMessage).toBe("bad \ufffd text");
    const fromDomain = connectErrorFrom(InvalidArgumentError.field(`config.${lone}`, lone), "p", sink);
    expect(fromDomain.rawMessage.isWellFormed()).toBe(true);
    expect(fromDomain.findDetails(BadRequestSchema)[0]?.fieldViolations[0]).toMatchObject({
      field: "config.bad \ufffd text",
      description: "bad \ufffd text",
    });
    expect(connectErrorFrom(new NotFoundError(lone), "p", sink).rawMessage).toBe("bad \ufffd text");
  });

  it("quote a caller's value short, cut between characters", () => {
    expect(quote("a".repeat(39) + "😀".repeat(5))).toBe(`"${"a".repeat(39)}…" (49 characters)`);
    expect(quote("\ud800x")).toBe('"\ufffdx"');
    expect(quote("x".repeat(900_000)).length).toBeLessThan(80);
  });
});

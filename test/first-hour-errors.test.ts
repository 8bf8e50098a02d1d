/**
 * What a new user meets in the first hour, answered with a status and a message that say what to
 * do (issue 45's frictions), over REST and the Connect protocol on a real server:
 * wrong methods (405 with Allow and a JSON error naming the method to use), a preflight without
 * CORS_ORIGINS, an unknown symbol, a misspelt top-level key, an amount sent as a string, and the
 * paging rule in one wording.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningServer, startServer } from "./support/start-server.ts";

const WALLET = "9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM";
const FRIEND = "So11111111111111111111111111111111111111112";
const LIMIT_RULE = "limit must be an integer from 1 to 100 (0 or omitted means 10)";

let server: RunningServer;
beforeAll(async () => {
  server = await startServer({ env: {} });
});
afterAll(async () => {
  await server?.close();
});

async function call(method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(`${server.baseUrl}${path}`, {
    method,
    headers: { "content-type": "application/json", ...headers },
    ...(body === undefined ? {} : { body: typeof body === "string" ? body : JSON.stringify(body) }),
  });
  const text = await res.text();
  return {
    status: res.status,
    allow: res.headers.get("allow"),
    text,
    json: text === "" ? undefined : JSON.parse(text),
  };
}

describe("wrong methods answer 405 with Allow and a JSON error naming the method to use", () => {
  it("GET /v1/agents/ID:pause (not GetAgent of an agent called ID:pause)", async () => {
    const got = await call("GET", "/v1/agents/abc:pause");
    expect(got.status).toBe(405);
    expect(got.allow).toBe("POST");
    expect(got.json).toEqual({
      code: "unimplemented",
      message: '"GET" is not allowed on this path: it answers POST only',
    });
  });

  it("DELETE /v1/agents/ID:pause (not DeleteAgent)", async () => {
    const got = await call("DELETE", "/v1/agents/abc:pause");
    expect(got.status).toBe(405);
    expect(got.allow).toBe("POST");
    expect(got.json.message).toBe('"DELETE" is not allowed on this path: it answers POST only');
  });

  it("GET on a Connect procedure path that takes POST only", async () => {
    for (const headers of [{}, { "content-type": "" }] as Record<string, string>[]) {
      const got = await call("GET", "/agent.v1.AgentService/CreateAgent", undefined, headers);
      expect(got.status).toBe(405);
      expect(got.allow).toBe("POST");
      expect(got.json.code).toBe("unimplemented");
      expect(got.json.message).toMatch(
        /^"GET" is not allowed on "\/agent\.v1\.AgentService\/CreateAgent": Connect calls are POST/,
      );
    }
    // A Connect client gets the bare 405 its protocol specifies (the conformance suite checks it).
    const client = await call("GET", "/agent.v1.AgentService/CreateAgent", undefined, {
      "connect-protocol-version": "1",
    });
    expect(client.status).toBe(405);
    expect(client.text).toBe("");
    // A side-effect-free procedure takes GET too (with ?message=&encoding=json), as Connect allows.
    const get = await call(
      "GET",
      `/agent.v1.AgentService/GetAgent?encoding=json&message=${encodeURIComponent('{"agentId":"nope"}')}`,
    );
    expect(get.status).toBe(404);
    expect(get.json.code).toBe("not_found");
  });

  it("a browser's preflight without CORS_ORIGINS says what to set", async () => {
    const got = await call("OPTIONS", "/v1/agents", undefined, {
      origin: "http://localhost:5173",
      "access-control-request-method": "POST",
    });
    expect(got.status).toBe(403);
    expect(got.json.code).toBe("permission_denied");
    expect(got.json.message).toMatch(/set CORS_ORIGINS to the origins browsers may call from/);
  });
});

describe("errors that name what is wrong", () => {
  it("an unknown symbol in prices is not_found, as an unknown mint is", async () => {
    const got = await call("GET", "/v1/tokens/prices?symbol=usdcc");
    expect(got.status).toBe(404);
    expect(got.json).toEqual({ code: "not_found", message: 'no token has the symbol "usdcc"' });
    expect((await call("GET", "/v1/tokens/prices?symbol=usdc")).status).toBe(200);
  });

  it("a misspelt top-level key names the key and the fields, not the decoder", async () => {
    const expected = {
      code: "invalid_argument",
      message: '"typ" is not a field of CreateAgentRequest: its fields are type, config',
    };
    const rest = await call("POST", "/v1/agents", { typ: "transfer" });
    expect(rest.status).toBe(400);
    expect(rest.json).toEqual(expected);
    // The Connect protocol ignores unknown keys, as its clients expect: the missing field is named.
    const connect = await call("POST", "/agent.v1.AgentService/CreateAgent", { typ: "transfer" });
    expect(connect.status).toBe(400);
    expect(connect.json.message).toBe(
      'type is required and must be one of "transfer" or "swap" or "trigger". config is required',
    );
  });

  it('"amount":"1.5" (a string) gets its own message, not a negative number\'s', async () => {
    const config = { source: WALLET, destination: FRIEND, token: "USDC", schedule: "hourly" };
    const quoted = await call("POST", "/v1/agents", {
      type: "transfer",
      config: { ...config, amount: "1.5" },
    });
    expect(quoted.status).toBe(400);
    expect(quoted.json.message).toBe(
      'config.amount must be a JSON number such as 1.5 and not a string such as "1.5"',
    );
    const negative = await call("POST", "/v1/agents", {
      type: "transfer",
      config: { ...config, amount: -1 },
    });
    expect(negative.status).toBe(400);
    expect(negative.json.message).toBe("config.amount must be a finite number greater than 0");
  });

  it("the paging rule has one wording, whether the limit is no integer or out of bounds", async () => {
    const notInteger = await call("GET", "/v1/agents?limit=abc");
    expect(notInteger.status).toBe(400);
    expect(notInteger.json.message).toBe(LIMIT_RULE);
    const tooMany = await call("GET", "/v1/agents?limit=1000");
    expect(tooMany.status).toBe(400);
    expect(tooMany.json.message).toBe(`${LIMIT_RULE} but is 1000`);
  });
});

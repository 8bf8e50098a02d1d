/**
 * Caps per owner on CreateAgent, on the memory store and on MongoDB (FerretDB): past
 * MAX_PENDING_PER_OWNER pending agents, or MAX_AGENTS_PER_OWNER pending, active and paused ones,
 * CreateAgent answers resource_exhausted naming the cap and what the owner holds; activating or
 * deleting an agent makes room again; a key an admin made with its own caps (POST /v1/apikeys)
 * creates up to those instead; the refusals are counted on /metrics.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TRANSFER_CONFIG } from "./support/agent-fixtures.ts";
import { agentStores, stopAgentOnChain } from "./support/agent-on-chain.ts";
import { type RunningServer, startServer } from "./support/start-server.ts";

const ADMIN = "a".repeat(40);

describe.each(agentStores("agent_caps"))("caps per owner on the %s store", (storeName, storeEnv) => {
  let server: RunningServer;

  beforeAll(async () => {
    server = await startServer({
      env: {
        AUTH_MODE: "apikey",
        ADMIN_API_KEY: ADMIN,
        MAX_AGENTS_PER_OWNER: "3",
        MAX_PENDING_PER_OWNER: "2",
        ...storeEnv(),
      },
    });
  });
  afterAll(() => stopAgentOnChain(storeName, server));

  const call = async (key: string, method: string, path: string, body?: object) => {
    const res = await fetch(`${server.baseUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: res.status, json: (await res.json()) as Record<string, unknown> };
  };
  const newKey = async (body: object) => {
    const { status, json } = await call(ADMIN, "POST", "/v1/apikeys", body);
    expect(status, JSON.stringify(json)).toBe(200);
    return json.data as { key: string; maxAgents: number; maxPendingAgents: number };
  };
  const create = (key: string) =>
    call(key, "POST", "/v1/agents", { type: "transfer", config: { ...TRANSFER_CONFIG, schedule: "hourly" } });
  const created = async (key: string) => {
    const { status, json } = await create(key);
    expect(status, JSON.stringify(json)).toBe(200);
    return (json.data as { agentId: string }).agentId;
  };
  const refused = async (key: string) => {
    const { status, json } = await create(key);
    expect(status).toBe(429);
    expect(json.code).toBe("resource_exhausted");
    return json.message as string;
  };

  it("refuses past the service's caps, naming the cap and the count, and makes room as agents leave", async () => {
    const { key } = await newKey({ owner: "capped", scopes: ["agents:read", "agents:write"] });
    const first = await created(key);
    await created(key);
    expect(await refused(key)).toBe(
      "this owner has 2 pending agents, the most allowed (2, MAX_PENDING_PER_OWNER); approve or delete one first",
    );
    // One activated: a pending place frees, the agent is still held.
    await server.context.agentStore.update("capped", first, () => ({ status: "active" }));
    const third = await created(key);
    expect(await refused(key)).toBe(
      "this owner has 3 agents (pending, active and paused), the most allowed (3, MAX_AGENTS_PER_OWNER); delete one first",
    );
    // Another owner is not affected by this one's caps.
    const other = await newKey({ owner: "other", scopes: ["agents:read", "agents:write"] });
    await created(other.key);
    // A deleted agent frees its places.
    expect((await call(key, "DELETE", `/v1/agents/${third}`)).status).toBe(200);
    await created(key);
    const metrics = await (await fetch(`${server.baseUrl}/metrics`)).text();
    expect(metrics).toMatch(/agent_creates_refused_total\{cap="pending"\} [1-9]/);
    expect(metrics).toMatch(/agent_creates_refused_total\{cap="agents"\} [1-9]/);
  });

  it("lets an admin give a key its own caps, and refuses invalid ones by field", async () => {
    const raised = await newKey({
      owner: "raised",
      scopes: ["agents:read", "agents:write"],
      maxAgents: 10,
      maxPendingAgents: 4,
    });
    expect([raised.maxAgents, raised.maxPendingAgents]).toEqual([10, 4]);
    for (let i = 0; i < 4; i++) await created(raised.key);
    expect(await refused(raised.key)).toBe(
      "this owner has 4 pending agents, the most allowed (4, this API key's max pending agents); approve or delete one first",
    );
    // The same owner's key without caps of its own is held to the service's.
    const plain = await newKey({ owner: "raised", scopes: ["agents:read", "agents:write"] });
    expect(await refused(plain.key)).toMatch(/^this owner has \d+ agents .*MAX_AGENTS_PER_OWNER/);
    const listed = await call(ADMIN, "GET", "/v1/apikeys?owner=raised");
    const caps = (listed.json.data as { keys: { maxAgents: number; maxPendingAgents: number }[] }).keys.map(
      (k) => [k.maxAgents, k.maxPendingAgents],
    );
    expect(caps.sort()).toEqual([
      [0, 0],
      [10, 4],
    ]);
    const invalid = await call(ADMIN, "POST", "/v1/apikeys", {
      owner: "raised",
      scopes: ["agents:write"],
      maxAgents: -1,
    });
    expect(invalid.status).toBe(400);
    expect(JSON.stringify(invalid.json)).toContain(
      "maxAgents must be 0 (the service's cap) or 1 to 10000000 but is -1",
    );
  });
});

/**
 * Webhooks end to end: endpoints registered over every protocol, agent events delivered to real
 * receivers on loopback sockets, verified with the Standard Webhooks reference library, retried,
 * disabled, rotated and resent; on the memory store and on MongoDB (FerretDB), where two servers
 * share the outbox as two replicas.
 */
import { randomBytes } from "node:crypto";
import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { WebhookService } from "../gen/webhook/v1/webhook_pb.ts";
import { createOverJson, SWAP } from "./support/agent-fixtures.ts";
import { createProtocols, type Outcome, type Protocol } from "./support/callers.ts";
import { useCleanups } from "./support/cleanups.ts";
import { startFerretdb } from "./support/ferretdb.ts";
import { type RunningServer, startServer } from "./support/start-server.ts";
import {
  FAST_WEBHOOKS,
  startWebhookReceiver,
  verifyWebhook,
  type WebhookReceiver,
} from "./support/webhook-receiver.ts";

const cleanup = useCleanups();

const STORES: [string, () => Record<string, string>][] = [
  ["memory", () => ({})],
  [
    "mongo",
    () => ({ MONGODB_URI: inject("mongoUri"), MONGODB_DB: `webhooks_${randomBytes(3).toString("hex")}` }),
  ],
];

function ok(outcome: Outcome): Record<string, unknown> {
  if (!outcome.ok) throw new Error(`call failed: ${outcome.code} ${outcome.message}`);
  return outcome.json.data as Record<string, unknown>;
}

async function until<T>(read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`not there in time: ${JSON.stringify(value)}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

interface Registered {
  endpointId: string;
  secret: string;
}

describe.each(STORES)("webhooks on %s", (_name, storeEnv) => {
  let server: RunningServer;
  let replica: RunningServer | undefined;
  let protocols: Protocol[];
  let json: Protocol;
  let receiver: WebhookReceiver;

  beforeAll(async () => {
    const env: Record<string, string> = { ...storeEnv(), ...FAST_WEBHOOKS };
    server = await startServer({ env });
    // On MongoDB a second replica shares the outbox: every delivery is still attempted by one.
    if (env.MONGODB_URI !== undefined) replica = await startServer({ env });
    protocols = createProtocols(server.baseUrl);
    json = protocols[0] as Protocol;
    receiver = await startWebhookReceiver();
  });
  afterAll(async () => {
    for (const p of protocols) p.close();
    await receiver.close();
    await replica?.close();
    await server.close();
  });

  async function register(request: Record<string, unknown>, protocol = json): Promise<Registered> {
    const data = ok(await protocol.call(WebhookService, "CreateWebhookEndpoint", request));
    const registered = { endpointId: String(data.endpointId), secret: String(data.secret) };
    cleanup(async () => {
      await json.call(WebhookService, "DeleteWebhookEndpoint", { endpointId: registered.endpointId });
    });
    return registered;
  }
  const deliveries = async (endpointId: string) =>
    ok(await json.call(WebhookService, "ListWebhookDeliveries", { endpointId, limit: 100 }))
      .deliveries as Record<string, unknown>[];
  const hooksFor = (tag: string) => receiver.received.filter((h) => h.path.endsWith(`?to=${tag}`));
  /** Until the test ends, the receiver answers this tag's webhooks with `status(n)` for the n-th one. */
  const answerTag = (tag: string, status: (n: number) => number) => {
    const previous = receiver.answer;
    let n = 0;
    receiver.answer = (hook, index) => (hook.path.endsWith(tag) ? status(n++) : previous(hook, index));
    cleanup(async () => {
      receiver.answer = previous;
    });
  };
  const newAgent = async () => {
    const created = await createOverJson(server.baseUrl, SWAP);
    return String((created.json.data as Record<string, unknown>).agentId);
  };

  it("registers over every protocol, shows the secret once, and delivers each event signed as Standard Webhooks says", async () => {
    const tag = randomBytes(4).toString("hex");
    const endpoints: Registered[] = [];
    for (const protocol of protocols) {
      endpoints.push(
        await register({ url: `${receiver.url}?to=${tag}`, description: protocol.name }, protocol),
      );
    }
    for (const e of endpoints) expect(e.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    const listed = ok(await json.call(WebhookService, "ListWebhookEndpoints", { limit: 100 }));
    expect(JSON.stringify(listed)).not.toContain("whsec_");
    const agentId = await newAgent();
    await until(
      async () => hooksFor(tag).length,
      (n) => n >= endpoints.length,
    );
    const hooks = hooksFor(tag);
    expect(hooks).toHaveLength(endpoints.length);
    for (const e of endpoints) {
      const listedDeliveries = await until(
        () => deliveries(e.endpointId),
        (d) => d[0]?.status === "delivered",
      );
      expect(listedDeliveries).toHaveLength(1);
      const delivery = listedDeliveries[0] as Record<string, unknown>;
      expect(delivery).toMatchObject({ eventType: "agent.created", attempts: 1, lastResponseCode: 200 });
      const hook = hooks.find((h) => h.id === delivery.deliveryId);
      expect(hook, "the webhook-id is the listed delivery's id").toBeDefined();
      // Only the endpoint's own secret verifies its webhook.
      const body = verifyWebhook(e.secret, hook as never) as Record<string, unknown>;
      const other = endpoints.find((x) => x !== e) as Registered;
      expect(() => verifyWebhook(other.secret, hook as never)).toThrow();
      expect(body).toMatchObject({ type: "agent.created", data: { type: "agent.created", agentId } });
      expect(new Date(String(body.timestamp)).toISOString()).toBe(body.timestamp);
      expect(hook?.headers["content-type"]).toBe("application/json");
    }
    // The same event has one id per endpoint.
    expect(new Set(hooks.map((h) => h.id)).size).toBe(endpoints.length);
  });

  it("retries a receiver that answers 500 ten times and then 200, with the same webhook-id, and is done", async () => {
    const tag = randomBytes(4).toString("hex");
    answerTag(tag, (n) => (n < 10 ? 500 : 200));
    const endpoint = await register({ url: `${receiver.url}?to=${tag}` });
    await newAgent();
    const [delivery] = await until(
      () => deliveries(endpoint.endpointId),
      (d) => d[0]?.status === "delivered",
    );
    expect(delivery).toMatchObject({ attempts: 11, lastResponseCode: 200, status: "delivered" });
    const hooks = hooksFor(tag);
    expect(hooks).toHaveLength(11);
    expect(new Set(hooks.map((h) => h.id))).toEqual(new Set([delivery?.deliveryId]));
    for (const hook of hooks) verifyWebhook(endpoint.secret, hook);
    // Done: nothing more arrives.
    await new Promise((r) => setTimeout(r, 300));
    expect(hooksFor(tag)).toHaveLength(11);
  });

  it("a 410 answer disables the endpoint: its listing says so, later events are not sent, and resending is refused", async () => {
    const tag = randomBytes(4).toString("hex");
    answerTag(tag, () => 410);
    const endpoint = await register({ url: `${receiver.url}?to=${tag}` });
    await newAgent();
    const [delivery] = await until(
      () => deliveries(endpoint.endpointId),
      (d) => d[0]?.status === "failed",
    );
    expect(delivery).toMatchObject({ attempts: 1, lastResponseCode: 410 });
    // The delivery is recorded first, then the endpoint disabled (the other order would cancel it).
    const mine = await until(
      async () =>
        (
          ok(await json.call(WebhookService, "ListWebhookEndpoints", { limit: 100 })).endpoints as Record<
            string,
            unknown
          >[]
        ).find((e) => e.endpointId === endpoint.endpointId),
      (e) => e?.status === "disabled",
    );
    expect(mine).toMatchObject({ status: "disabled", disabledReason: "the endpoint answered 410 Gone" });
    await newAgent();
    await new Promise((r) => setTimeout(r, 300));
    expect(hooksFor(tag)).toHaveLength(1);
    const resend = await json.call(WebhookService, "ResendWebhookDelivery", {
      endpointId: endpoint.endpointId,
      deliveryId: delivery?.deliveryId,
    });
    expect(resend.ok ? 0 : resend.code).toBe(Code.FailedPrecondition);
  });

  it("after a rotation, deliveries verify with the new secret and, for the overlap, the old one", async () => {
    const tag = randomBytes(4).toString("hex");
    const endpoint = await register({ url: `${receiver.url}?to=${tag}` });
    const rotated = ok(
      (await protocols[2]?.call(WebhookService, "RotateWebhookSecret", {
        endpointId: endpoint.endpointId,
      })) as Outcome,
    );
    const secret = String(rotated.secret);
    expect(secret).not.toBe(endpoint.secret);
    const expires = new Date(String(rotated.previousSecretExpiresAt)).getTime();
    expect(expires - Date.now()).toBeGreaterThan(23.9 * 3_600_000);
    await newAgent();
    await until(
      async () => hooksFor(tag).length,
      (n) => n >= 1,
    );
    const [hook] = hooksFor(tag);
    expect(hook?.signature.split(" ")).toHaveLength(2);
    verifyWebhook(secret, hook as never);
    verifyWebhook(endpoint.secret, hook as never);
    const listed = ok(await json.call(WebhookService, "ListWebhookEndpoints", { limit: 100 }));
    const mine = (listed.endpoints as Record<string, unknown>[]).find(
      (e) => e.endpointId === endpoint.endpointId,
    );
    expect(new Date(String(mine?.previousSecretExpiresAt)).getTime()).toBe(expires);
  });

  it("sends only the event types an endpoint asked for, and resends one with the same webhook-id", async () => {
    const tag = randomBytes(4).toString("hex");
    const endpoint = await register({ url: `${receiver.url}?to=${tag}`, eventTypes: ["agent.deleted"] });
    const agentId = await newAgent();
    ok(
      await json.call((await import("../gen/agent/v1/agent_pb.ts")).AgentService, "DeleteAgent", { agentId }),
    );
    await until(
      async () => hooksFor(tag).length,
      (n) => n >= 1,
    );
    await new Promise((r) => setTimeout(r, 200));
    const hooks = hooksFor(tag);
    expect(hooks).toHaveLength(1);
    expect(JSON.parse(hooks[0]?.body ?? "{}")).toMatchObject({ type: "agent.deleted", data: { agentId } });
    const [delivery] = await deliveries(endpoint.endpointId);
    const resent = ok(
      await json.call(WebhookService, "ResendWebhookDelivery", {
        endpointId: endpoint.endpointId,
        deliveryId: delivery?.deliveryId,
      }),
    );
    expect(resent.status).toBe("pending");
    await until(
      async () => hooksFor(tag).length,
      (n) => n >= 2,
    );
    expect(hooksFor(tag)[1]?.id).toBe(hooks[0]?.id);
    const [after] = await until(
      () => deliveries(endpoint.endpointId),
      (d) => d[0]?.status === "delivered" && d[0]?.attempts === 2,
    );
    expect(after?.deliveryId).toBe(delivery?.deliveryId);
  });

  it("deleting an endpoint cancels its pending deliveries: nothing more is sent", async () => {
    const tag = randomBytes(4).toString("hex");
    answerTag(tag, () => 503);
    const endpoint = await register({ url: `${receiver.url}?to=${tag}` });
    await newAgent();
    await until(
      async () => hooksFor(tag).length,
      (n) => n >= 2,
    );
    const deleted = ok(
      await json.call(WebhookService, "DeleteWebhookEndpoint", { endpointId: endpoint.endpointId }),
    );
    expect(deleted.deleted).toBe(true);
    await new Promise((r) => setTimeout(r, 200));
    const seen = hooksFor(tag).length;
    await new Promise((r) => setTimeout(r, 300));
    expect(hooksFor(tag)).toHaveLength(seen);
    const missing = await json.call(WebhookService, "ListWebhookDeliveries", {
      endpointId: endpoint.endpointId,
    });
    expect(missing.ok ? 0 : missing.code).toBe(Code.NotFound);
    const again = ok(
      await json.call(WebhookService, "DeleteWebhookEndpoint", { endpointId: endpoint.endpointId }),
    );
    expect(again.deleted).toBe(false);
  });

  it("delivers a burst of events once each, across replicas where there are two", async () => {
    const tag = randomBytes(4).toString("hex");
    const endpoint = await register({ url: `${receiver.url}?to=${tag}`, eventTypes: ["agent.created"] });
    const agents = await Promise.all(Array.from({ length: 40 }, () => newAgent()));
    const other = replica;
    if (other !== undefined) {
      // The replica's own writes fan out too.
      agents.push(
        ...(await Promise.all(Array.from({ length: 10 }, () => createOverJson(other.baseUrl, SWAP)))).map(
          (c) => String((c.json.data as Record<string, unknown>).agentId),
        ),
      );
    }
    await until(
      async () => hooksFor(tag).length,
      (n) => n >= agents.length,
      20_000,
    );
    await new Promise((r) => setTimeout(r, 300));
    const hooks = hooksFor(tag);
    expect(hooks).toHaveLength(agents.length);
    expect(new Set(hooks.map((h) => h.id)).size).toBe(agents.length);
    const delivered = new Set(
      hooks.map((h) => (JSON.parse(h.body) as { data: { agentId: string } }).data.agentId),
    );
    expect(delivered).toEqual(new Set(agents));
    for (const hook of hooks) verifyWebhook(endpoint.secret, hook);
  });
});

describe("webhook safety: no way into the service's own network", () => {
  let server: RunningServer;
  let json: Protocol;
  let receiver: WebhookReceiver;
  const metric = async (stage: string, reason: string) => {
    const text = await (await fetch(`${server.baseUrl}/metrics`)).text();
    const line = text
      .split("\n")
      .find((l) => l.startsWith(`webhook_ssrf_refusals_total{reason="${reason}",stage="${stage}"}`));
    return line === undefined ? 0 : Number(line.split(" ").at(-1));
  };

  beforeAll(async () => {
    receiver = await startWebhookReceiver();
    server = await startServer({
      env: { ...FAST_WEBHOOKS, WEBHOOK_ALLOW_PRIVATE_NETWORKS: "false" },
      overrides: {
        // A name that resolves to a public address and a loopback one, as a rebinding attacker's
        // DNS would answer: every address is checked, so the public one does not let it through.
        // And a name of a private deployment's DNS that resolves to loopback alone.
        webhookResolve: async (hostname) =>
          hostname === "rebind.test"
            ? [
                { address: "93.184.215.14", family: 4 },
                { address: "127.0.0.1", family: 4 },
              ]
            : hostname === "loopback.test"
              ? [{ address: "127.0.0.1", family: 4 }]
              : (await import("node:dns")).promises.lookup(hostname, { all: true }),
      },
    });
    json = createProtocols(server.baseUrl)[0] as Protocol;
  });
  afterAll(async () => {
    json.close();
    await receiver.close();
    await server.close();
  });

  it("refuses literal private, loopback, link-local and metadata addresses at registration, and counts them", async () => {
    const cases: [string, string][] = [
      ["http://127.0.0.1:9/hook", "loopback"],
      ["https://[::1]/hook", "loopback"],
      ["http://169.254.169.254/latest/meta-data/", "linkLocal"],
      ["https://10.1.2.3/hook", "private"],
      ["https://[::ffff:127.0.0.1]/hook", "loopback"],
      ["https://[fd00:ec2::254]/", "uniqueLocal"],
      ["https://0.0.0.0/", "unspecified"],
      ["https://224.0.0.1/", "multicast"],
      // IPv4-compatible IPv6: the metadata address, loopback and a private one, by another name.
      ["http://[::a9fe:a9fe]/", "ipv4Compatible"],
      ["https://[::127.0.0.1]/hook", "ipv4Compatible"],
      ["https://[::10.0.0.1]/hook", "ipv4Compatible"],
      // Loopback by definition (RFC 6761), whatever a resolver says: every delivery would be refused.
      ["http://localhost:9/hook", "loopback"],
      ["https://LOCALHOST./hook", "loopback"],
      ["https://hooks.localhost/", "loopback"],
    ];
    for (const [url, reason] of cases) {
      const before = await metric("registration", reason);
      const outcome = await json.call(WebhookService, "CreateWebhookEndpoint", { url });
      expect(outcome.ok, url).toBe(false);
      if (outcome.ok) continue;
      expect(outcome.code).toBe(Code.InvalidArgument);
      expect(outcome.violations[0]?.field).toBe("url");
      expect(outcome.violations[0]?.description).toContain("must not point to a private");
      // The setting that allows it is named, for those trying webhooks on their own machine.
      expect(outcome.violations[0]?.description).toContain(
        "which the server allows when WEBHOOK_ALLOW_PRIVATE_NETWORKS is true",
      );
      expect(await metric("registration", reason), url).toBe(before + 1);
    }
  });

  it("refuses at delivery a host name that resolves to a loopback address, and one that also does", async () => {
    for (const [host, tag] of [
      [`loopback.test:${receiver.port}`, "loopback"],
      [`rebind.test:${receiver.port}`, "rebind"],
    ] as const) {
      const before = await metric("delivery", "loopback");
      const data = ok(
        await json.call(WebhookService, "CreateWebhookEndpoint", { url: `http://${host}/hooks?to=${tag}` }),
      );
      const endpointId = String(data.endpointId);
      await createOverJson(server.baseUrl, SWAP);
      const [delivery] = await until(
        async () =>
          ok(await json.call(WebhookService, "ListWebhookDeliveries", { endpointId })).deliveries as Record<
            string,
            unknown
          >[],
        (d) => Number(d[0]?.attempts ?? 0) >= 2,
      );
      expect(delivery).toMatchObject({
        status: "pending",
        lastResponseCode: 0,
        lastError:
          "refused: the endpoint resolves to a loopback address, which the server allows when WEBHOOK_ALLOW_PRIVATE_NETWORKS is true",
      });
      expect(await metric("delivery", "loopback")).toBeGreaterThanOrEqual(before + 2);
      ok(await json.call(WebhookService, "DeleteWebhookEndpoint", { endpointId }));
    }
    expect(receiver.received, "nothing reached the loopback receiver").toHaveLength(0);
  });
});

describe("webhooks: redirects are answers, never followed", () => {
  it("does not follow a redirect to an internal address, and counts it", async () => {
    const receiver = await startWebhookReceiver();
    const internal = await startWebhookReceiver();
    const server = await startServer({ env: FAST_WEBHOOKS });
    const json = createProtocols(server.baseUrl)[0] as Protocol;
    cleanup(async () => {
      json.close();
      await server.close();
      await receiver.close();
      await internal.close();
    });
    receiver.answer = () => ({ status: 302, headers: { location: `${internal.url}?stolen=1` } });
    const data = ok(await json.call(WebhookService, "CreateWebhookEndpoint", { url: receiver.url }));
    await createOverJson(server.baseUrl, SWAP);
    await receiver.waitFor(2);
    const [delivery] = ok(
      await json.call(WebhookService, "ListWebhookDeliveries", { endpointId: String(data.endpointId) }),
    ).deliveries as Record<string, unknown>[];
    expect(delivery).toMatchObject({
      lastResponseCode: 302,
      lastError: "the endpoint answered with a redirect, which is not followed",
    });
    expect(internal.received).toHaveLength(0);
    const text = await (await fetch(`${server.baseUrl}/metrics`)).text();
    expect(text).toMatch(/webhook_ssrf_refusals_total\{reason="redirect",stage="delivery"\} [1-9]/);
  });
});

describe("WebhookService rules", () => {
  let server: RunningServer;
  let json: Protocol;

  beforeAll(async () => {
    server = await startServer({
      env: {
        WEBHOOKS_ENABLED: "true",
        WEBHOOK_MAX_ENDPOINTS_PER_OWNER: "2",
        AUTH_MODE: "apikey",
        ADMIN_API_KEY: "a".repeat(40),
      },
    });
    json = createProtocols(server.baseUrl)[0] as Protocol;
  });
  afterAll(async () => {
    json.close();
    await server.close();
  });
  const keyOf = async (owner: string, scopes: string[]) => {
    const { key } = await server.context.apiKeys.create({ owner, scopes });
    return { authorization: `Bearer ${key}` };
  };

  it("names the field and the rule of every invalid request", async () => {
    const writer = await keyOf("rules", ["agents:read", "agents:write"]);
    const invalid = async (method: string, request: Record<string, unknown>) => {
      const outcome = await json.call(WebhookService, method, request, writer);
      if (outcome.ok || outcome.code !== Code.InvalidArgument) throw new Error(`${method} was not refused`);
      return outcome.violations.map((v) => `${v.field} ${v.description}`);
    };
    expect(await invalid("CreateWebhookEndpoint", { url: "" })).toEqual(["url is required"]);
    expect(await invalid("CreateWebhookEndpoint", { url: "http://example.com/hook" })).toEqual([
      "url must be an https URL (the server accepts http when WEBHOOK_ALLOW_HTTP is true)",
    ]);
    expect(await invalid("CreateWebhookEndpoint", { url: "ftp://example.com/hook" })).toEqual([
      "url must be an https URL",
    ]);
    expect(await invalid("CreateWebhookEndpoint", { url: "https://user:pw@example.com/" })).toEqual([
      "url must not carry credentials",
    ]);
    expect(
      await invalid("CreateWebhookEndpoint", { url: `https://example.com/${"a".repeat(2100)}` }),
    ).toEqual(["url must be at most 2048 characters"]);
    expect(await invalid("CreateWebhookEndpoint", { url: "not a url" })).toEqual([
      "url must be an absolute URL",
    ]);
    const both = await invalid("CreateWebhookEndpoint", {
      url: "https://example.com/hook",
      eventTypes: ["agent.created", "agent.exploded"],
      description: "d".repeat(300),
    });
    expect(both).toHaveLength(2);
    expect(both[0]).toMatch(/^eventTypes must each be one of "agent.created" or .*\(got "agent.exploded"\)$/);
    expect(both[1]).toBe("description must be at most 256 characters");
    expect(await invalid("ListWebhookEndpoints", { limit: 101 })).toEqual([
      "limit must be an integer from 1 to 100 (0 or omitted means 10) but is 101",
    ]);
    expect(await invalid("ListWebhookDeliveries", { endpointId: "ep_x", status: "lost" })).toEqual([
      'status must be "pending" or "delivered" or "failed" or "canceled"',
    ]);
    expect(await invalid("RotateWebhookSecret", {})).toEqual(["endpointId is required"]);
  });

  it("keeps each owner's endpoints to itself, with the agents scopes, and caps them per owner", async () => {
    const alice = await keyOf("alice", ["agents:read", "agents:write"]);
    const bob = await keyOf("bob", ["agents:read", "agents:write"]);
    const reader = await keyOf("alice", ["agents:read"]);
    const tokens = await keyOf("alice", ["tokens:read"]);
    const created = ok(
      await json.call(WebhookService, "CreateWebhookEndpoint", { url: "https://example.com/a" }, alice),
    );
    const endpointId = String(created.endpointId);
    const code = (outcome: Outcome) => (outcome.ok ? 0 : outcome.code);
    expect(
      code(
        await json.call(WebhookService, "CreateWebhookEndpoint", { url: "https://example.com/r" }, reader),
      ),
    ).toBe(Code.PermissionDenied);
    expect(code(await json.call(WebhookService, "ListWebhookEndpoints", {}, tokens))).toBe(
      Code.PermissionDenied,
    );
    expect(code(await json.call(WebhookService, "ListWebhookEndpoints", {}))).toBe(Code.Unauthenticated);
    expect(ok(await json.call(WebhookService, "ListWebhookEndpoints", {}, reader)).total).toBe(1);
    expect(ok(await json.call(WebhookService, "ListWebhookEndpoints", {}, bob)).total).toBe(0);
    for (const method of ["RotateWebhookSecret", "ListWebhookDeliveries"]) {
      expect(code(await json.call(WebhookService, method, { endpointId }, bob)), method).toBe(Code.NotFound);
    }
    expect(
      code(
        await json.call(WebhookService, "ResendWebhookDelivery", { endpointId, deliveryId: "msg_x_1" }, bob),
      ),
    ).toBe(Code.NotFound);
    expect(ok(await json.call(WebhookService, "DeleteWebhookEndpoint", { endpointId }, bob)).deleted).toBe(
      false,
    );
    ok(await json.call(WebhookService, "CreateWebhookEndpoint", { url: "https://example.com/b" }, alice));
    const third = await json.call(
      WebhookService,
      "CreateWebhookEndpoint",
      { url: "https://example.com/c" },
      alice,
    );
    expect(code(third)).toBe(Code.ResourceExhausted);
    expect(third.ok ? "" : third.message).toBe(
      "an owner may have at most 2 webhook endpoints. Delete one first",
    );
    ok(await json.call(WebhookService, "CreateWebhookEndpoint", { url: "https://example.com/b" }, bob));
    expect(ok(await json.call(WebhookService, "DeleteWebhookEndpoint", { endpointId }, alice)).deleted).toBe(
      true,
    );
    ok(await json.call(WebhookService, "CreateWebhookEndpoint", { url: "https://example.com/c" }, alice));
  });
});

describe("webhooks while the database is away", () => {
  it("answer unavailable fast, keep their outbox, and deliver again once it is back, without a restart", async () => {
    const db = await startFerretdb();
    cleanup(() => db.stop());
    const receiver = await startWebhookReceiver();
    cleanup(() => receiver.close());
    const server = await startServer({
      env: {
        ...FAST_WEBHOOKS,
        MONGODB_URI: db.uri,
        MONGODB_DB: "webhook_faults",
        MONGODB_SERVER_SELECTION_TIMEOUT_MS: "500",
      },
    });
    cleanup(() => server.close());
    const json = createProtocols(server.baseUrl)[0] as Protocol;
    cleanup(async () => json.close());
    const created = ok(await json.call(WebhookService, "CreateWebhookEndpoint", { url: receiver.url }));
    await createOverJson(server.baseUrl, SWAP);
    await receiver.waitFor(1);

    await db.kill();
    const started = Date.now();
    const down = await json.call(WebhookService, "ListWebhookEndpoints", {});
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(down.ok ? 0 : down.code).toBe(Code.Unavailable);
    expect(down.ok ? "" : down.message).not.toMatch(/mongo|ECONN|127\.0\.0\.1|topology|socket/i);
    // Rounds keep failing while it is away; the log says so, at most a line a second, without URLs.
    await new Promise((r) => setTimeout(r, 1_500));
    const failures = server.logs.filter((l) => l.msg === "webhook deliveries: a round failed");
    expect(failures.length).toBeGreaterThan(0);
    expect(failures.length).toBeLessThanOrEqual(3);
    expect(JSON.stringify(server.logs)).not.toContain(receiver.url);
    expect(JSON.stringify(server.logs)).not.toContain("whsec_");

    await db.restart();
    // The same server serves again, and its loop delivers the next event.
    const listed = await until(
      () => json.call(WebhookService, "ListWebhookEndpoints", {}),
      (o) => o.ok,
      30_000,
    );
    expect((ok(listed).endpoints as Record<string, unknown>[])[0]?.endpointId).toBe(created.endpointId);
    await createOverJson(server.baseUrl, SWAP);
    await receiver.waitFor(2, 20_000);
    verifyWebhook(String(created.secret), receiver.received[1] as never);
  });
});

describe("webhooks at shutdown", () => {
  it("stop their poll timer and leave no attempt in flight once the server has closed", async () => {
    const server = await startServer({ env: FAST_WEBHOOKS });
    const loop = server.webhooks;
    expect(loop?.stats().timer).toBe(true);
    await server.close();
    expect(loop?.stats()).toEqual({ timer: false, inFlight: 0 });
  });
});

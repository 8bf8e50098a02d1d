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
    const previous = receiver.answer;
    let failures = 0;
    receiver.answer = (hook) => (hook.path.endsWith(tag) && failures++ < 10 ? 500 : 200);
    cleanup(async () => {
      receiver.answer = previous;
    });
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
    const previous = receiver.answer;
    receiver.answer = (hook) => (hook.path.endsWith(tag) ? 410 : previous(hook, 0));
    cleanup(async () => {
      receiver.answer = previous;
    });
    const endpoint = await register({ url: `${receiver.url}?to=${tag}` });
    await newAgent();
    const [delivery] = await until(
      () => deliveries(endpoint.endpointId),
      (d) => d[0]?.status === "failed",
    );
    expect(delivery).toMatchObject({ attempts: 1, lastResponseCode: 410 });
    const listed = ok(await json.call(WebhookService, "ListWebhookEndpoints", { limit: 100 }));
    const mine = (listed.endpoints as Record<string, unknown>[]).find(
      (e) => e.endpointId === endpoint.endpointId,
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
    const previous = receiver.answer;
    receiver.answer = (hook) => (hook.path.endsWith(tag) ? 503 : previous(hook, 0));
    cleanup(async () => {
      receiver.answer = previous;
    });
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

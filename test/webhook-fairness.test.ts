/**
 * One owner's endpoints that never answer cannot hold up another owner's webhooks: each owner has
 * at most WEBHOOK_MAX_IN_FLIGHT_PER_OWNER attempts in flight, and free places go round the owners
 * with work. A slow tenant's endpoints accept TCP connections and never answer (their attempts
 * hang for the whole WEBHOOK_TIMEOUT_MS); another owner's delivery must arrive while they all
 * still hang. On the memory store and on MongoDB (FerretDB).
 */
import { randomBytes } from "node:crypto";
import * as net from "node:net";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { describe, expect, inject, it } from "vitest";
import { WebhookService } from "../gen/webhook/v1/webhook_pb.ts";
import type { NewEvent } from "../src/events/event-log.ts";
import { useCleanups } from "./support/cleanups.ts";
import { startServer } from "./support/start-server.ts";
import { FAST_WEBHOOKS, startWebhookReceiver } from "./support/webhook-receiver.ts";

const cleanup = useCleanups();
const ADMIN_KEY = `admin-${randomBytes(16).toString("hex")}`;

const STORES: [string, () => Record<string, string>][] = [
  ["memory", () => ({})],
  [
    "mongo",
    () => ({
      MONGODB_URI: inject("mongoUri"),
      MONGODB_DB: `webhook_fairness_${randomBytes(3).toString("hex")}`,
    }),
  ],
];

/** A listener that accepts connections and never answers on them. */
async function startBlackHole(): Promise<{ url: string; open: () => number; accepted: () => number }> {
  const sockets = new Set<net.Socket>();
  let accepted = 0;
  const server = net.createServer((socket) => {
    accepted++;
    sockets.add(socket);
    socket.on("error", () => {});
    socket.once("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  cleanup(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => server.close(resolve));
  });
  const { port } = server.address() as net.AddressInfo;
  return { url: `http://127.0.0.1:${port}/hook`, open: () => sockets.size, accepted: () => accepted };
}

const created = (owner: string, n: number): NewEvent => ({
  type: "agent.created",
  owner,
  agentId: `${owner}-agent-${n}`,
  at: new Date(),
  key: `${owner}-${n}:v1`,
});

describe.each(STORES)("webhooks of several owners on the %s store", (_name, storeEnv) => {
  it("deliver another owner's event while every attempt at a slow tenant's endpoints still hangs", {
    timeout: 60_000,
  }, async () => {
    const perOwner = 4;
    const server = await startServer({
      env: {
        ...storeEnv(),
        ...FAST_WEBHOOKS,
        AUTH_MODE: "apikey",
        ADMIN_API_KEY: ADMIN_KEY,
        // Places for the slow tenant's two endpoints at four each: without a cap per owner, they
        // would take every place there is.
        WEBHOOK_CONCURRENCY: "8",
        WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT: "4",
        WEBHOOK_MAX_IN_FLIGHT_PER_OWNER: String(perOwner),
        // Longer than the test: an attempt at a black hole ends only when the test lets it.
        WEBHOOK_TIMEOUT_MS: "60000",
      },
    });
    cleanup(async () => {
      await server.context.mongoClient?.db(server.context.config.mongo?.dbName).dropDatabase();
      await server.close();
    });
    const webhooks = createClient(
      WebhookService,
      createConnectTransport({ baseUrl: server.baseUrl, httpVersion: "1.1" }),
    );
    const keyOf = async (owner: string) =>
      (await server.context.apiKeys.create({ owner, scopes: ["agents:read", "agents:write"] })).key;
    const register = async (key: string, url: string) =>
      webhooks.createWebhookEndpoint({ url }, { headers: { authorization: `Bearer ${key}` } });

    const holes = [await startBlackHole(), await startBlackHole()];
    const slowKey = await keyOf("slow-tenant");
    for (const hole of holes) await register(slowKey, hole.url);
    const receiver = await startWebhookReceiver();
    cleanup(() => receiver.close());
    await register(await keyOf("other-owner"), receiver.url);

    // Six events of the slow tenant's (twelve deliveries) first, then one of the other owner's.
    for (let n = 0; n < 6; n++) await server.context.events.append(created("slow-tenant", n));
    await server.context.events.append(created("other-owner", 0));

    await receiver.waitFor(1, 20_000);
    expect(JSON.parse(receiver.received[0]?.body ?? "{}")).toMatchObject({
      type: "agent.created",
      data: { agentId: "other-owner-agent-0" },
    });
    // Meanwhile the slow tenant holds its share of places, each attempt still hanging.
    await expect.poll(() => holes.reduce((sum, h) => sum + h.accepted(), 0)).toBe(perOwner);
    expect(holes.reduce((sum, h) => sum + h.open(), 0)).toBe(perOwner);
    // And once the other owner's attempt is recorded, those are all that is in flight.
    await expect.poll(() => server.webhooks?.stats().inFlight).toBe(perOwner);
  });
});

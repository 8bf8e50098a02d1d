/**
 * The webhook store's rules on both adapters (MongoDB on the global setup's server, FerretDB
 * unless MONGODB_URI says otherwise): deliveries once per id, one holder per attempt, take-over of
 * an abandoned claim, stale outcomes dropped, cancellation on delete and disable, the cursor.
 */
import { randomBytes } from "node:crypto";
import { MongoClient } from "mongodb";
import { afterEach, describe, expect, inject, it } from "vitest";
import { createMemoryWebhookStore } from "../src/webhooks/memory-webhook-store.ts";
import { createMongoWebhookStore } from "../src/webhooks/mongo-webhook-store.ts";
import type { DeliveryRecord, EndpointRecord, WebhookStore } from "../src/webhooks/webhook-store.ts";

const runId = randomBytes(3).toString("hex");
let databases = 0;

const ADAPTERS: [string, () => Promise<{ store: WebhookStore; cleanup: () => Promise<void> }>][] = [
  ["memory", async () => ({ store: createMemoryWebhookStore(), cleanup: async () => {} })],
  [
    "mongo",
    async () => {
      const client = new MongoClient(inject("mongoUri"), { serverSelectionTimeoutMS: 2000 });
      const db = client.db(`webhook_store_${runId}_${++databases}`);
      return {
        store: createMongoWebhookStore({ db, guard: (op) => op() }),
        cleanup: async () => {
          try {
            await db.dropDatabase();
          } finally {
            await client.close();
          }
        },
      };
    },
  ],
];

const T0 = new Date("2026-11-25T12:00:00.000Z");
const at = (ms: number) => new Date(T0.getTime() + ms);

const endpoint = (id: string, owner = "alice"): EndpointRecord => ({
  endpointId: id,
  owner,
  url: "https://example.com/hooks",
  eventTypes: [],
  description: "",
  createdAt: T0,
  fromSeq: 0,
  secrets: [{ secret: "whsec_c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0", createdAt: T0 }],
});

const delivery = (endpointId: string, seq: number, owner = "alice"): DeliveryRecord => ({
  deliveryId: `msg_${endpointId}_${seq}`,
  endpointId,
  owner,
  eventSeq: seq,
  eventType: "agent.created",
  eventAt: T0,
  payload: `{"seq":${seq}}`,
  createdAt: T0,
  status: "pending",
  attempts: 0,
  lastResponseCode: 0,
  nextAttemptAt: T0,
  windowStart: T0,
});

describe.each(ADAPTERS)("the webhook store on %s", (_name, make) => {
  let cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const c of cleanups) await c();
    cleanups = [];
  });
  const open = async () => {
    const made = await make();
    cleanups.push(made.cleanup);
    return made.store;
  };
  const claimOptions = (ms: number, worker = "w1") => ({ worker, now: at(ms), leaseMs: 1_000 });

  it("enqueues a delivery once per id, however often it is enqueued", async () => {
    const store = await open();
    await store.createEndpoint(endpoint("e1"), 10);
    const ids = (added: readonly DeliveryRecord[]) => added.map((d) => d.deliveryId);
    expect(ids(await store.enqueue([delivery("e1", 1), delivery("e1", 2)]))).toEqual([
      "msg_e1_1",
      "msg_e1_2",
    ]);
    expect(ids(await store.enqueue([delivery("e1", 2), delivery("e1", 3), delivery("e1", 1)]))).toEqual([
      "msg_e1_3",
    ]);
    const { deliveries, total } = await store.listDeliveries("alice", "e1", { limit: 10, offset: 0 });
    expect(total).toBe(3);
    expect(deliveries.map((d) => d.eventSeq)).toEqual([3, 2, 1]);
    expect(deliveries[0]).toEqual(delivery("e1", 3));
  });

  it("answers what is due without the owners it is told to leave out, the longest waiting first", async () => {
    const store = await open();
    await store.createEndpoint(endpoint("e1", "alice"), 10);
    await store.createEndpoint(endpoint("e2", "bob"), 10);
    await store.enqueue([
      ...[1, 2, 3].map((seq) => ({ ...delivery("e1", seq, "alice"), nextAttemptAt: at(seq) })),
      { ...delivery("e2", 4, "bob"), nextAttemptAt: at(4) },
    ]);
    const ids = (due: readonly DeliveryRecord[]) => due.map((d) => d.deliveryId);
    // alice's backlog fills a short answer...
    expect(ids(await store.due(at(10), 2))).toEqual(["msg_e1_1", "msg_e1_2"]);
    // ...unless she is left out: bob's delivery is found.
    expect(ids(await store.due(at(10), 2, { excludeOwners: ["alice"] }))).toEqual(["msg_e2_4"]);
    expect(ids(await store.due(at(10), 10, { excludeOwners: ["alice", "bob"] }))).toEqual([]);
    expect(ids(await store.due(at(10), 10, { excludeOwners: [] }))).toHaveLength(4);
  });

  it("gives each attempt to one claimer, takes over an abandoned claim, drops a stale retry, and keeps the first end", async () => {
    const store = await open();
    await store.createEndpoint(endpoint("e1"), 10);
    await store.enqueue([delivery("e1", 1)]);
    const [due] = await store.due(at(0), 10);
    const claims = await Promise.all([
      store.claimAttempt(due as DeliveryRecord, claimOptions(0, "w1")),
      store.claimAttempt(due as DeliveryRecord, claimOptions(0, "w2")),
    ]);
    expect(claims.filter((c) => c === 1)).toHaveLength(1);
    expect(claims.filter((c) => c === undefined)).toHaveLength(1);
    // While the lease lasts, nobody else gets the delivery.
    expect(await store.claimAttempt(due as DeliveryRecord, claimOptions(500, "w3"))).toBeUndefined();
    // The holder vanished: once its lease and the skew allowance are over, attempt 2 is taken.
    expect(await store.claimAttempt(due as DeliveryRecord, claimOptions(2_500, "w3"))).toBe(2);
    const claimed = due as DeliveryRecord;
    await store.finishAttempt(claimed, 2, {
      status: "pending",
      lastResponseCode: 500,
      lastAttemptAt: at(2_500),
      nextAttemptAt: at(3_000),
    });
    // The vanished holder comes back and records attempt 1 as a retry: too late, it is dropped.
    await store.finishAttempt(claimed, 1, {
      status: "pending",
      lastResponseCode: 503,
      lastAttemptAt: at(0),
      nextAttemptAt: at(1_000),
    });
    const stored = await store.getDelivery("alice", "e1", "msg_e1_1");
    expect(stored).toMatchObject({
      status: "pending",
      attempts: 2,
      lastResponseCode: 500,
      nextAttemptAt: at(3_000),
    });
    // Not due yet; then due, and a claimer that read it before attempt 2 was recorded gets nothing.
    expect(await store.due(at(2_900), 10)).toEqual([]);
    expect(await store.claimAttempt(claimed, claimOptions(3_000))).toBeUndefined();
    const [again] = await store.due(at(3_000), 10);
    expect(await store.claimAttempt(again as DeliveryRecord, claimOptions(3_000))).toBe(3);
    await store.finishAttempt(again as DeliveryRecord, 3, {
      status: "delivered",
      lastResponseCode: 204,
      lastAttemptAt: at(3_000),
      deliveredAt: at(3_010),
    });
    // The first end stays: a late one from the vanished holder changes nothing.
    await store.finishAttempt(claimed, 1, {
      status: "failed",
      lastResponseCode: 410,
      lastAttemptAt: at(0),
    });
    const done = await store.getDelivery("alice", "e1", "msg_e1_1");
    expect(done).toMatchObject({ status: "delivered", attempts: 3, lastResponseCode: 204 });
    expect(done?.nextAttemptAt).toBeUndefined();
    expect(await store.due(at(10_000), 10)).toEqual([]);
  });

  it("cancels pending deliveries when the endpoint is deleted or disabled, and resends on request", async () => {
    const store = await open();
    await store.createEndpoint(endpoint("e1"), 10);
    await store.createEndpoint(endpoint("e2"), 10);
    await store.enqueue([delivery("e1", 1), delivery("e2", 1), delivery("e2", 2)]);
    await store.setHealth("e2", { kind: "failing", since: at(1) });
    await store.setHealth("e2", { kind: "failing", since: at(2) });
    expect((await store.getEndpoint("alice", "e2"))?.failingSince).toEqual(at(1));
    await store.setHealth("e2", { kind: "disabled", at: at(3), reason: "gone" });
    const disabled = await store.getEndpoint("alice", "e2");
    expect(disabled).toMatchObject({ disabledAt: at(3), disabledReason: "gone" });
    expect((await store.subscribers(["alice"])).map((e) => e.endpointId)).toEqual(["e1"]);
    expect(await store.deleteEndpoint("bob", "e1")).toBe(false);
    expect(await store.deleteEndpoint("alice", "e1")).toBe(true);
    expect(await store.due(at(10), 10)).toEqual([]);
    const resent = await store.resend("alice", "e2", "msg_e2_2", at(20));
    expect(resent).toMatchObject({ status: "pending", nextAttemptAt: at(20), windowStart: at(20) });
    expect(await store.resend("bob", "e2", "msg_e2_2", at(20))).toBeUndefined();
    expect((await store.due(at(20), 10)).map((d) => d.deliveryId)).toEqual(["msg_e2_2"]);
  });

  it("caps endpoints per owner, keeps owners apart, and replaces secrets", async () => {
    const store = await open();
    expect(await store.createEndpoint(endpoint("a1"), 2)).toBe("created");
    expect(await store.createEndpoint(endpoint("a2"), 2)).toBe("created");
    expect(await store.createEndpoint(endpoint("a3"), 2)).toBe("limit");
    expect(await store.createEndpoint(endpoint("b1", "bob"), 2)).toBe("created");
    expect(await store.getEndpoint("bob", "a1")).toBeUndefined();
    expect((await store.listEndpoints("alice", { limit: 10, offset: 0 })).total).toBe(2);
    const secrets = [
      { secret: "whsec_bmV3bmV3bmV3bmV3bmV3bmV3bmV3bmV3", createdAt: at(5) },
      { secret: "whsec_b2xkb2xkb2xkb2xkb2xkb2xkb2xkb2xk", createdAt: T0, expiresAt: at(100) },
    ];
    expect(await store.setSecrets("bob", "a1", secrets)).toBeUndefined();
    expect((await store.setSecrets("alice", "a1", secrets))?.secrets).toEqual(secrets);
    expect((await store.endpointById("a1"))?.secrets).toEqual(secrets);
  });

  it("knows the earliest place an enabled endpoint listens from", async () => {
    const store = await open();
    expect(await store.earliestSubscription()).toBeUndefined();
    await store.createEndpoint({ ...endpoint("e1"), fromSeq: 7 }, 10);
    await store.createEndpoint({ ...endpoint("e2", "bob"), fromSeq: 3 }, 10);
    expect(await store.earliestSubscription()).toBe(3);
    await store.setHealth("e2", { kind: "disabled", at: T0, reason: "gone" });
    expect(await store.earliestSubscription()).toBe(7);
    await store.deleteEndpoint("alice", "e1");
    expect(await store.earliestSubscription()).toBeUndefined();
  });

  it("moves the fan-out cursor forward only", async () => {
    const store = await open();
    expect(await store.cursor()).toBeUndefined();
    await Promise.all([store.advanceCursor(5), store.advanceCursor(3)]);
    expect(await store.cursor()).toBe(5);
    await store.advanceCursor(4);
    expect(await store.cursor()).toBe(5);
    await store.advanceCursor(9);
    expect(await store.cursor()).toBe(9);
  });

  it("prunes finished deliveries older than the bound, never pending ones", async () => {
    const store = await open();
    await store.createEndpoint(endpoint("e1"), 10);
    await store.enqueue([delivery("e1", 1), delivery("e1", 2)]);
    const [first] = await store.due(at(0), 1);
    const n = await store.claimAttempt(first as DeliveryRecord, claimOptions(0));
    await store.finishAttempt(first as DeliveryRecord, n as number, {
      status: "delivered",
      lastResponseCode: 200,
      lastAttemptAt: at(0),
      deliveredAt: at(1),
    });
    expect(await store.prune(at(1))).toBe(1);
    expect(
      (await store.listDeliveries("alice", "e1", { limit: 10, offset: 0 })).deliveries.map((d) => d.eventSeq),
    ).toEqual([2]);
  });
});

/**
 * The fan-out of events into deliveries, on the memory store and event log: one delivery per
 * event and subscribed endpoint (its owner's events after it was made, of its types), once however
 * often a page is read again, and no read of the log while no endpoint listens.
 */
import { describe, expect, it } from "vitest";
import type { EventLog } from "../src/events/event-log.ts";
import { createMemoryEventLog } from "../src/events/memory-event-log.ts";
import { createMemoryWebhookStore } from "../src/webhooks/memory-webhook-store.ts";
import { createWebhookFanout, deliveryIdOf } from "../src/webhooks/webhook-fanout.ts";
import type { EndpointRecord } from "../src/webhooks/webhook-store.ts";

const endpoint = (id: string, owner: string, fromSeq: number, eventTypes: string[] = []): EndpointRecord => ({
  endpointId: id,
  owner,
  url: "https://example.com/hooks",
  eventTypes,
  description: "",
  createdAt: new Date(),
  fromSeq,
  secrets: [{ secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", createdAt: new Date() }],
});

describe("the webhook fan-out", () => {
  it("makes one delivery per event and subscribed endpoint, once, and reads nothing while nobody listens", async () => {
    const inner = createMemoryEventLog();
    let reads = 0;
    const log: EventLog = {
      ...inner,
      after: (...args) => {
        reads++;
        return inner.after(...args);
      },
    };
    const store = createMemoryWebhookStore();
    const fanout = createWebhookFanout({ store, log, render: (e) => ({ agentId: e.agentId }), pageSize: 3 });
    const append = (owner: string, type: string, n: number) =>
      log.append({ type, owner, agentId: `a${n}`, at: new Date(), key: `k${n}` });

    await append("alice", "agent.created", 1);
    expect(await fanout.step()).toEqual({ fresh: [], more: false });
    expect(await store.cursor()).toBe(1);
    for (let n = 2; n <= 4; n++) await append("alice", "agent.created", n);
    expect((await fanout.step()).fresh).toEqual([]);
    expect(reads, "no endpoint: the log is not read").toBe(0);

    await store.createEndpoint(endpoint("ep_all", "alice", 4), 10);
    await store.createEndpoint(endpoint("ep_runs", "alice", 4, ["run.succeeded"]), 10);
    await store.createEndpoint(endpoint("ep_bob", "bob", 4), 10);
    await append("alice", "agent.created", 5);
    await append("bob", "agent.paused", 6);
    await append("alice", "run.succeeded", 7);
    await append("alice", "agent.deleted", 8);
    const first = await fanout.step();
    expect(first.more).toBe(true);
    expect(first.fresh.map((d) => d.deliveryId)).toEqual([
      deliveryIdOf("ep_all", 5),
      deliveryIdOf("ep_bob", 6),
      deliveryIdOf("ep_all", 7),
      deliveryIdOf("ep_runs", 7),
    ]);
    expect(JSON.parse(first.fresh[0]?.payload ?? "")).toMatchObject({
      type: "agent.created",
      data: { agentId: "a5" },
    });
    // The process dies after enqueueing the next page and before moving the cursor: the page is
    // read again (here or by another replica) and adds nothing twice.
    let failOnce = true;
    const dying = createWebhookFanout({
      store: {
        ...store,
        advanceCursor: async (seq) => {
          if (failOnce) {
            failOnce = false;
            throw new Error("killed");
          }
          return store.advanceCursor(seq);
        },
      },
      log,
      render: (e) => ({ agentId: e.agentId }),
      pageSize: 3,
    });
    await expect(dying.step()).rejects.toThrow("killed");
    expect((await store.listDeliveries("alice", "ep_all", { limit: 10, offset: 0 })).total).toBe(3);
    expect((await dying.step()).fresh).toEqual([]);
    expect((await store.listDeliveries("alice", "ep_all", { limit: 10, offset: 0 })).total).toBe(3);
    expect(await store.cursor()).toBe(8);
  });
});

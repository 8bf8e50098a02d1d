/**
 * The event repair on MongoDB (FerretDB unless MONGODB_URI is set): changes whose event was never
 * appended (the log's database failed, or the process died between the two writes, which is the
 * same from the log's side) are announced by the next sweep, once each and under the key the
 * writer would have used; changes that never happened (an abandoned version claim, a tombstone
 * whose deletion never came) are not.
 */
import { randomBytes } from "node:crypto";
import { describe, expect, inject, it } from "vitest";
import type { AgentRecord } from "../src/agent/agent-store.ts";
import { createMongoAgentStore, type MongoAgentStore } from "../src/agent/mongo-agent-store.ts";
import { createAnnouncingAgentStore } from "../src/events/announcing-agent-store.ts";
import type { EventLog } from "../src/events/event-log.ts";
import { createMongoEventLog } from "../src/events/mongo-event-log.ts";
import { createMongoEventRepair } from "../src/events/mongo-event-repair.ts";
import { createRunAnnouncer } from "../src/events/run-announcer.ts";
import { createMongoRunStore } from "../src/scheduler/mongo-run-store.ts";
import { TRANSFER_CONFIG } from "./support/agent-fixtures.ts";
import { useCleanups } from "./support/cleanups.ts";

const uri = inject("mongoUri");
const cleanup = useCleanups();

async function setUp() {
  const dbName = `event_repair_test_${randomBytes(4).toString("hex")}`;
  const mongo: MongoAgentStore = await createMongoAgentStore({ uri, dbName });
  cleanup(async () => {
    await mongo.client.db(dbName).dropDatabase();
    await mongo.close();
  });
  const log = createMongoEventLog({ db: mongo.db });
  /** The log as the writers see it: appends fail while `down` is set. */
  let down = false;
  const flaky: EventLog = {
    ...log,
    append: (event) => (down ? Promise.reject(new Error("the log is down")) : log.append(event)),
  };
  const failures: unknown[] = [];
  const store = createAnnouncingAgentStore({ store: mongo, log: flaky, onError: (e) => failures.push(e) });
  const repair = createMongoEventRepair({ db: mongo.db, log });
  const types = async (agentId: string) => (await log.after(0, 1000, { agentId })).map((e) => e.type);
  return {
    mongo,
    store,
    log,
    flaky,
    repair,
    types,
    failures,
    setDown: (value: boolean) => {
      down = value;
    },
  };
}

const record = (agentId: string): AgentRecord => ({
  agentId,
  owner: "alice",
  type: "transfer",
  status: "pending",
  config: { ...TRANSFER_CONFIG },
  createdAt: new Date(),
  nextRunAt: new Date(Date.now() + 3_600_000),
});

describe("event repair (mongo)", () => {
  it("announces creation, status changes and deletion whose appends failed, once each, in order", async () => {
    const t = await setUp();
    const since = new Date(Date.now() - 1_000);
    t.setDown(true);
    await t.store.create({ record: record("agent-a") });
    // Each change still lands and answers: only its event is missing.
    expect(
      (await t.store.update("alice", "agent-a", () => ({ status: "active", nextRunAt: new Date() })))?.status,
    ).toBe("active");
    await t.store.update("alice", "agent-a", () => ({ status: "paused", nextRunAt: null }));
    await t.store.update("alice", "agent-a", () => ({ status: "active", nextRunAt: new Date() }));
    await t.store.update("alice", "agent-a", () => ({
      status: "failed",
      nextRunAt: null,
      failureReason: "broke",
    }));
    expect(t.failures.length).toBe(5);
    expect(await t.types("agent-a")).toEqual([]);

    expect(await t.repair.repair(since)).toBe(5);
    expect(await t.types("agent-a")).toEqual([
      "agent.created",
      "agent.activated",
      "agent.paused",
      "agent.resumed",
      "agent.failed",
    ]);
    const failed = (await t.log.after(0, 1000, { agentId: "agent-a" })).at(-1);
    expect(failed?.data).toEqual({ failureReason: "broke" });
    // A second sweep finds nothing missing.
    expect(await t.repair.repair(since)).toBe(0);

    await t.store.delete("alice", "agent-a");
    expect(await t.repair.repair(since)).toBe(1);
    expect((await t.types("agent-a")).at(-1)).toBe("agent.deleted");
    expect(await t.repair.repair(since)).toBe(0);
  });

  it("does not announce twice what the writer announced itself", async () => {
    const t = await setUp();
    const since = new Date(Date.now() - 1_000);
    await t.store.create({ record: record("agent-b") });
    await t.store.update("alice", "agent-b", () => ({ status: "active", nextRunAt: new Date() }));
    await t.store.delete("alice", "agent-b");
    expect(await t.types("agent-b")).toEqual(["agent.created", "agent.activated", "agent.deleted"]);
    expect(await t.repair.repair(since)).toBe(0);
  });

  it("announces no change that did not happen: an abandoned claim, a tombstone of a live agent", async () => {
    const t = await setUp();
    const since = new Date(Date.now() - 1_000);
    await t.store.create({ record: record("agent-c") });
    // A writer claimed version 1 with its event, and died before writing the agent.
    await t.mongo.db.collection("agent_versions").insertOne({
      _id: JSON.stringify(["agent-c", 1]),
      agentId: "agent-c",
      version: 1,
      change: {
        set: { status: "paused", announced: { type: "agent.paused", at: new Date() } },
        unset: ["nextRunAt"],
      },
      claimedAt: new Date(),
      nonce: "abandoned",
    } as never);
    // A deleter wrote its tombstone, and died before deleting.
    await t.mongo.db
      .collection("agent_tombstones")
      .insertOne({ _id: "agent-c", owner: "alice", deletedAt: new Date() } as never);
    expect(await t.repair.repair(since)).toBe(0);
    expect(await t.types("agent-c")).toEqual(["agent.created"]);
  });

  it("looks at a page of each kind per sweep, and goes on from there at the next sweep", async () => {
    const t = await setUp();
    const since = new Date(Date.now() - 1_000);
    const paged = createMongoEventRepair({ db: t.mongo.db, log: t.log, page: 3 });
    t.setDown(true);
    for (let i = 0; i < 7; i++) {
      // A millisecond apart, as creations mostly are.
      await t.store.create({
        record: { ...record(`agent-p${i}`), createdAt: new Date(Date.now() - 100 + i) },
      });
    }
    // Three creations a sweep, oldest first: three sweeps for seven, then nothing.
    expect(await paged.repair(since)).toBe(3);
    expect(await paged.repair(since)).toBe(3);
    expect(await paged.repair(since)).toBe(1);
    expect(await paged.repair(since)).toBe(0);
    const created = await t.log.after(0, 1000);
    expect(created.map((e) => e.agentId)).toEqual(Array.from({ length: 7 }, (_, i) => `agent-p${i}`));
  });

  it("announces a recorded run whose events were never appended: started, then its outcome", async () => {
    const t = await setUp();
    const since = new Date(Date.now() - 1_000);
    const runs = createMongoRunStore({ db: t.mongo.db, guard: (op) => op() });
    const slot = { agentId: "agent-d", owner: "alice", scheduledAt: new Date(Date.now() - 60_000) };
    const lease = await runs.claim(slot, { worker: "w", now: new Date(), leaseMs: 30_000 });
    if (lease === undefined) throw new Error("no lease");
    const startedAt = new Date();
    await runs.record(
      lease,
      {
        ...slot,
        runId: "agent-d.run.1",
        attempt: 1,
        startedAt,
        finishedAt: new Date(),
        outcome: "succeeded",
        result: { moved: 1 },
      },
      { now: new Date(), settles: true },
    );
    expect(await t.repair.repair(since)).toBe(2);
    const events = await t.log.after(0, 1000, { agentId: "agent-d" });
    expect(events.map((e) => e.type)).toEqual(["run.started", "run.succeeded"]);
    expect(events[1]?.data).toMatchObject({
      run: { runId: "agent-d.run.1", outcome: "succeeded", result: { moved: 1 } },
    });
    // What the scheduler appends for the same run has the same keys: nothing twice.
    const announcer = createRunAnnouncer({ log: t.log });
    await announcer.started(slot, 1, startedAt);
    expect((await t.log.after(0, 1000, { agentId: "agent-d" })).length).toBe(2);
  });
});

/**
 * The AgentStore contract against both adapters, plus what only the MongoDB adapter has: its
 * document layout, its indexes, and its behaviour while the database is down and after it is back.
 * The MongoDB tests run on the server from the global setup (MONGODB_URI or FerretDB) and are never
 * skipped: without a server they fail.
 */
import { randomBytes } from "node:crypto";
import { MongoClient, MongoNetworkError, MongoServerError, MongoServerSelectionError } from "mongodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { newAgentId } from "../src/agent/agent-id.ts";
import { type AgentRecord, type AgentStore, copyAgentRecord } from "../src/agent/agent-store.ts";
import { createMemoryAgentStore } from "../src/agent/memory-agent-store.ts";
import { createMongoAgentStore, databaseInUri, isUnavailableError } from "../src/agent/mongo-agent-store.ts";
import { UnavailableError } from "../src/domain/errors.ts";
import { describeAgentStoreContract } from "./agent-store.contract.ts";
import { type FerretdbServer, startFerretdb } from "./support/ferretdb.ts";

const uri = inject("mongoUri");
const runId = randomBytes(3).toString("hex");
let databases = 0;

/** A database name no other test (or earlier run) uses. */
function freshDbName(): string {
  return `agent_store_test_${runId}_${++databases}`;
}

function movableClock(start = new Date()) {
  let current = start;
  return {
    now: () => current,
    set: (d: Date) => {
      current = d;
    },
  };
}

function sampleRecord(overrides: Partial<AgentRecord> = {}): AgentRecord {
  return {
    agentId: newAgentId(),
    owner: "owner-1",
    type: "transfer",
    status: "active",
    config: { amount: "1" },
    createdAt: new Date("2030-01-01T00:00:00.000Z"),
    nextRunAt: new Date("2030-01-01T00:01:00.000Z"),
    ...overrides,
  };
}

describe("newAgentId", () => {
  it("is 22 URL-safe characters of 128 random bits", () => {
    const seen = new Set<string>();
    for (let i = 0; i < 1000; i++) {
      const id = newAgentId();
      expect(id).toMatch(/^[A-Za-z0-9_-]{22}$/);
      expect(Buffer.from(id, "base64url")).toHaveLength(16);
      seen.add(id);
    }
    expect(seen.size).toBe(1000);
  });
});

describeAgentStoreContract("memory", async () => {
  const clock = movableClock();
  const store = createMemoryAgentStore({ now: clock.now });
  return { store, clock, cleanup: () => store.close() };
});

describeAgentStoreContract("mongo", async () => {
  const clock = movableClock();
  const dbName = freshDbName();
  const store = await createMongoAgentStore({ uri, dbName, now: clock.now });
  return {
    store,
    clock,
    cleanup: async () => {
      try {
        await store.client.db(dbName).dropDatabase();
      } finally {
        await store.close();
      }
    },
  };
});

describe("copyAgentRecord", () => {
  it("copies the config as structuredClone does: nested values equal, nothing shared, an own __proto__ key kept a key", () => {
    const config = JSON.parse(
      '{"wallet":"w","amount":1.5,"nested":{"list":[1,"two",null,true,{"deep":[[]]}],"empty":{}},"__proto__":{"x":1}}',
    );
    const record: AgentRecord = {
      agentId: "a",
      owner: "o",
      type: "swap",
      status: "active",
      config,
      createdAt: new Date(1),
    };
    const copy = copyAgentRecord(record);
    expect(copy.config).toStrictEqual(structuredClone(config));
    expect(Object.getPrototypeOf(copy.config)).toBe(Object.prototype);
    expect(Object.hasOwn(copy.config, "__proto__")).toBe(true);
    (
      ((copy.config.nested as { list: unknown[] }).list[4] as { deep: unknown[][] }).deep[0] as unknown[]
    ).push(1);
    expect(JSON.stringify(record.config)).not.toContain("[[1]]");
  });
});

describe("isUnavailableError", () => {
  it("recognises unreachable servers and dropped connections, and nothing else", () => {
    const epipe = Object.assign(new Error("This socket has been ended by the other party"), {
      code: "EPIPE",
    });
    const labelled = new MongoServerError({ message: "overloaded", code: 462 });
    labelled.addErrorLabel("RetryableError");
    expect(isUnavailableError(new MongoNetworkError("connection reset"))).toBe(true);
    expect(isUnavailableError(new MongoServerSelectionError("no server", {} as never))).toBe(true);
    expect(isUnavailableError(new MongoServerError({ message: "shutting down", code: 91 }))).toBe(true);
    expect(isUnavailableError(labelled)).toBe(true);
    expect(isUnavailableError(epipe)).toBe(true);
    expect(isUnavailableError(new MongoServerError({ message: "E11000 duplicate key", code: 11000 }))).toBe(
      false,
    );
    expect(isUnavailableError(new MongoServerError({ message: "bad value", code: 2 }))).toBe(false);
    expect(isUnavailableError(new Error("boom"))).toBe(false);
    expect(isUnavailableError("EPIPE")).toBe(false);
  });
});

describe("mongo agent store", () => {
  let raw: MongoClient;

  beforeAll(() => {
    raw = new MongoClient(uri, { serverSelectionTimeoutMS: 5_000 });
  });

  afterAll(async () => {
    await raw.close();
  });

  async function withStore(fn: (store: AgentStore, dbName: string) => Promise<void>): Promise<void> {
    const dbName = freshDbName();
    const store = await createMongoAgentStore({ uri, dbName });
    try {
      await fn(store, dbName);
    } finally {
      await raw.db(dbName).dropDatabase();
      await store.close();
    }
  }

  it("stores agents with _id = agentId and exactly the record's fields", async () => {
    await withStore(async (store, dbName) => {
      const r = sampleRecord();
      await store.create({ record: r });
      const doc = await raw.db(dbName).collection<{ _id: string }>("agents").findOne({ _id: r.agentId });
      expect(doc).toEqual({
        _id: r.agentId,
        owner: r.owner,
        type: r.type,
        status: r.status,
        config: r.config,
        createdAt: r.createdAt,
        nextRunAt: r.nextRunAt,
      });
    });
  });

  it("counts an owner's agents once from the agents themselves, then from its tally (a point read)", async () => {
    await withStore(async (store, dbName) => {
      const db = raw.db(dbName);
      // Agents stored before tallies existed: none of them tallied.
      const old = (["pending", "active", "failed"] as const).map((status) =>
        sampleRecord({ owner: "legacy", status }),
      );
      await db
        .collection("agents")
        .insertMany(old.map(({ agentId, ...rest }) => ({ _id: agentId, ...rest }) as never));
      expect(await store.countOf("legacy")).toEqual({ held: 2, pending: 1 });
      expect(await db.collection("agent_owner_tallies").findOne({ _id: "legacy" as never })).toMatchObject({
        held: 2,
        pending: 1,
        counted: true,
      });
      // From here on the tally moves with each change; the agents are not read again.
      await store.create({ record: sampleRecord({ owner: "legacy", status: "pending" }) });
      await store.update("legacy", old[0]?.agentId as string, () => ({ status: "active" }));
      await store.delete("legacy", old[1]?.agentId as string);
      await db
        .collection("agents")
        .insertOne({ _id: "untallied" as never, owner: "legacy", status: "pending" });
      expect(await store.countOf("legacy")).toEqual({ held: 2, pending: 1 });
    });
  });

  it("keeps idempotency keys as generations {_id: JSON [owner, key, gen], ...}, found by _id", async () => {
    const clock = movableClock(new Date("2030-01-01T00:00:00.000Z"));
    const dbName = freshDbName();
    const store = await createMongoAgentStore({ uri, dbName, now: clock.now });
    try {
      const keys = raw.db(dbName).collection<{ _id: string }>("agent_idempotency_keys");
      const r = sampleRecord({ owner: "a:b" });
      await store.create({ record: r, idempotencyKey: "c", fingerprint: "f1" });
      // The key carries the agent it stands for and the request's fingerprint: it is written
      // first, so a retry after a crash between the two writes completes the same agent.
      expect(await keys.find().toArray()).toEqual([
        {
          _id: '["a:b","c",0]',
          owner: "a:b",
          key: "c",
          gen: 0,
          agentId: r.agentId,
          fingerprint: "f1",
          record: expect.objectContaining({ _id: r.agentId, owner: "a:b", status: r.status }),
          expiresAt: new Date("2030-01-02T00:00:00.000Z"),
        },
      ]);
      clock.set(new Date("2030-01-02T00:00:00.000Z"));
      const next = sampleRecord({ owner: "a:b" });
      expect(await store.create({ record: next, idempotencyKey: "c", fingerprint: "f2" })).toEqual({
        agent: next,
        created: true,
      });
      // Generation 1 takes over; generation 0 stays, so generations are found by _id from 0 up.
      expect((await keys.find().toArray()).map((k) => k._id).sort()).toEqual([
        '["a:b","c",0]',
        '["a:b","c",1]',
      ]);
      expect(await keys.findOne({ _id: '["a:b","c",1]' })).toEqual({
        _id: '["a:b","c",1]',
        owner: "a:b",
        key: "c",
        gen: 1,
        agentId: next.agentId,
        fingerprint: "f2",
        record: expect.objectContaining({ _id: next.agentId }),
        expiresAt: new Date("2030-01-03T00:00:00.000Z"),
      });
    } finally {
      await raw.db(dbName).dropDatabase();
      await store.close();
    }
  });

  it("a create whose agent write failed after its key was written is completed by the retry, as the same agent", async () => {
    await withStore(async (store, dbName) => {
      const r = sampleRecord();
      // The state a crash leaves between the two writes: the key names the agent, the agent is missing.
      await store.create({ record: r, idempotencyKey: "crash", fingerprint: "f" });
      await raw
        .db(dbName)
        .collection("agents")
        .deleteOne({ _id: r.agentId } as never);
      const retried = await store.create({
        record: sampleRecord(),
        idempotencyKey: "crash",
        fingerprint: "f",
      });
      expect(retried.agent.agentId).toBe(r.agentId);
      expect(await store.get(r.owner, r.agentId)).toEqual(r);
      expect(await raw.db(dbName).collection("agents").countDocuments()).toBe(1);
    });
  });

  it("creates the list and scheduler indexes on first use", async () => {
    await withStore(async (store, dbName) => {
      await store.get("owner-1", newAgentId());
      const indexes = await raw.db(dbName).collection("agents").listIndexes().toArray();
      const keys = indexes.map((i) => i.key as Record<string, number>);
      expect(keys).toContainEqual({ owner: 1, type: 1, status: 1, createdAt: -1, _id: -1 });
      expect(keys).toContainEqual({ status: 1, nextRunAt: 1 });
      const keyIndexes = await raw.db(dbName).collection("agent_idempotency_keys").listIndexes().toArray();
      expect(keyIndexes.map((i) => i.key)).toContainEqual({ owner: 1, key: 1, gen: -1 });
    });
  });

  it("accepts its indexes already existing under other names", async () => {
    const dbName = freshDbName();
    await raw.db(dbName).collection("agents").createIndex({ status: 1, nextRunAt: 1 }, { name: "by_hand" });
    const store = await createMongoAgentStore({ uri, dbName });
    try {
      const r = sampleRecord();
      await store.create({ record: r });
      expect(await store.get(r.owner, r.agentId)).toEqual(r);
    } finally {
      await raw.db(dbName).dropDatabase();
      await store.close();
    }
  });

  it("uses the database named in the URI when no dbName is given", async () => {
    expect(databaseInUri("mongodb://127.0.0.1:27017/")).toBeUndefined();
    expect(databaseInUri("mongodb://127.0.0.1:27017")).toBeUndefined();
    expect(databaseInUri("mongodb://u:p@h1:1,h2:2/agents?replicaSet=rs")).toBe("agents");
    expect(databaseInUri("mongodb+srv://cluster.example.com/my%20db")).toBe("my db");
    expect(databaseInUri("mongodb://h/?w=1")).toBeUndefined();

    const dbName = freshDbName();
    // The URI with its path (the database) replaced; kept as text, hosts may be a list.
    const withDb = uri.replace(/^(mongodb(?:\+srv)?:\/\/[^/?]*)\/?[^?]*/, `$1/${dbName}`);
    expect(databaseInUri(withDb)).toBe(dbName);
    const store = await createMongoAgentStore({ uri: withDb });
    try {
      await store.create({ record: sampleRecord() });
      expect(await raw.db(dbName).collection("agents").countDocuments()).toBe(1);
    } finally {
      await raw.db(dbName).dropDatabase();
      await store.close();
    }
  });

  it("is created without a reachable server, and then fails fast with UnavailableError", async () => {
    const store = await createMongoAgentStore({
      uri: "mongodb://127.0.0.1:1",
      serverSelectionTimeoutMS: 300,
    });
    try {
      const calls: [string, () => Promise<unknown>][] = [
        ["create", () => store.create({ record: sampleRecord() })],
        ["create with key", () => store.create({ record: sampleRecord(), idempotencyKey: "k" })],
        ["get", () => store.get("owner-1", newAgentId())],
        ["delete", () => store.delete("owner-1", newAgentId())],
        ["list", () => store.list("owner-1", { limit: 10, offset: 0 })],
        ["ping", () => store.ping()],
      ];
      for (const [name, call] of calls) {
        const started = Date.now();
        const err = await call().then(
          () => new Error(`${name} resolved`),
          (e: unknown) => e,
        );
        expect(err, name).toBeInstanceOf(UnavailableError);
        expect((err as Error).message, name).toBe("agent store is unavailable");
        expect((err as Error).cause, name).toBeInstanceOf(Error);
        expect(Date.now() - started, name).toBeLessThan(3_000);
      }
    } finally {
      await store.close();
    }
  });

  describe("with its own server, stopped and restarted", () => {
    let server: FerretdbServer;

    beforeAll(async () => {
      server = await startFerretdb();
    });

    afterAll(async () => {
      await server?.stop();
    });

    async function expectUnavailable(promise: Promise<unknown>): Promise<void> {
      await expect(promise).rejects.toThrow(UnavailableError);
      await promise.catch((err: unknown) => {
        expect((err as Error).message).toBe("agent store is unavailable");
      });
    }

    it("recovers after the server comes back, with no restart of the store", async () => {
      const store = await createMongoAgentStore({
        uri: server.uri,
        dbName: "recovery",
        serverSelectionTimeoutMS: 1_000,
      });
      try {
        const r = sampleRecord();
        await store.create({ record: r, idempotencyKey: "k" });
        await store.ping();

        await server.kill();
        await expectUnavailable(store.ping());
        await expectUnavailable(store.get(r.owner, r.agentId));
        await expectUnavailable(store.list(r.owner, { limit: 10, offset: 0 }));
        await expectUnavailable(store.create({ record: sampleRecord(), idempotencyKey: "k" }));

        await server.restart();
        await store.ping();
        expect(await store.get(r.owner, r.agentId)).toEqual(r);
        expect(await store.create({ record: sampleRecord(), idempotencyKey: "k" })).toEqual({
          agent: r,
          created: false,
        });
        expect((await store.list(r.owner, { limit: 10, offset: 0 })).total).toBe(1);
      } finally {
        await store.close();
      }
    });

    it("creates its indexes once the server is up when it first was down", async () => {
      await server.kill();
      const store = await createMongoAgentStore({
        uri: server.uri,
        dbName: "late",
        serverSelectionTimeoutMS: 500,
      });
      try {
        await expectUnavailable(store.create({ record: sampleRecord() }));
        await server.restart();
        const r = sampleRecord();
        await store.create({ record: r });
        expect(await store.get(r.owner, r.agentId)).toEqual(r);
        const indexes = await store.client.db("late").collection("agents").listIndexes().toArray();
        expect(indexes.map((i) => i.key)).toContainEqual({ status: 1, nextRunAt: 1 });
      } finally {
        await store.close();
      }
    });
  });
});

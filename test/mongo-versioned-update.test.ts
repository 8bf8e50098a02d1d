/**
 * Versioned updates on the real server from the global setup (FerretDB or MONGODB_URI): concurrent
 * read-modify-writes of one document lose nothing, and a claim abandoned by a writer that died is
 * rolled forward by the next writer.
 */
import { randomBytes } from "node:crypto";
import { type Collection, type Document, MongoClient } from "mongodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { type FieldChange, versionedUpdate } from "../src/agent/mongo-versioned-update.ts";

interface Doc {
  _id: string;
  version?: number;
  count: number;
  tags: string[];
  status?: string;
}

const uri = inject("mongoUri");
let client: MongoClient;
let docs: Collection<Doc>;
let versions: Collection<Document>;
const dbName = `versioned_update_test_${randomBytes(3).toString("hex")}`;

beforeAll(async () => {
  client = new MongoClient(uri, { serverSelectionTimeoutMS: 2000 });
  docs = client.db(dbName).collection<Doc>("docs");
  versions = client.db(dbName).collection("versions");
});

afterAll(async () => {
  await client.db(dbName).dropDatabase();
  await client.close();
});

const update = (id: string, change: (d: Doc) => FieldChange | undefined, rollForwardAfterMs = 60_000) =>
  versionedUpdate({ docs, versions, filter: { _id: id }, change, now: () => new Date(), rollForwardAfterMs });

describe("versionedUpdate", () => {
  it("applies 50 concurrent read-modify-writes without losing one", async () => {
    await docs.insertOne({ _id: "a", count: 0, tags: [] });
    await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        update("a", (d) => ({ set: { count: d.count + 1, tags: [...d.tags, `t${i}`] }, unset: [] })),
      ),
    );
    const doc = await docs.findOne({ _id: "a" });
    expect(doc?.count).toBe(50);
    expect(doc?.version).toBe(50);
    expect(new Set(doc?.tags)).toEqual(new Set(Array.from({ length: 50 }, (_, i) => `t${i}`)));
  });

  it("returns the document as written, removes unset fields, and leaves it alone when there is no change", async () => {
    await docs.insertOne({ _id: "b", count: 1, tags: [], status: "x" });
    const written = await update("b", () => ({ set: { count: 5 }, unset: ["status"] }));
    expect(written).toEqual({ _id: "b", count: 5, tags: [], version: 1 });
    expect(await docs.findOne({ _id: "b" })).toEqual(written);
    expect(await update("b", () => undefined)).toEqual(written);
  });

  it("rolls forward a claim whose writer died before writing, then applies its own change", async () => {
    await docs.insertOne({ _id: "c", version: 4, count: 1, tags: [] });
    // A writer claimed version 5 two minutes ago and died before writing it.
    await versions.insertOne({
      _id: JSON.stringify(["c", 5]) as never,
      agentId: "c",
      version: 5,
      change: { set: { status: "paused" }, unset: [] },
      claimedAt: new Date(Date.now() - 120_000),
    });
    const written = await update("c", (d) => ({ set: { count: d.count + 1 }, unset: [] }));
    expect(written).toMatchObject({ version: 6, status: "paused", count: 2 });
    expect(await docs.findOne({ _id: "c" })).toMatchObject({ version: 6, status: "paused", count: 2 });
  });

  it("answers undefined for a document that does not exist, and lets errors of the change escape", async () => {
    expect(await update("missing", () => ({ set: { count: 1 }, unset: [] }))).toBeUndefined();
    await docs.insertOne({ _id: "d", count: 1, tags: [] });
    await expect(
      update("d", () => {
        throw new Error("not allowed");
      }),
    ).rejects.toThrow("not allowed");
    expect((await docs.findOne({ _id: "d" }))?.version).toBeUndefined();
  });
});

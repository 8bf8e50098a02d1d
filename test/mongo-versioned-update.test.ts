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

const update = (
  id: string,
  change: (d: Doc) => FieldChange | undefined,
  rollForwardAfterMs = 60_000,
  more: { known?: Doc; now?: () => Date } = {},
) =>
  versionedUpdate<Doc>({
    docs,
    versions,
    id,
    change,
    now: more.now ?? (() => new Date()),
    rollForwardAfterMs,
    ...(more.known === undefined ? {} : { known: more.known }),
  });

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

  it("tries a known copy first: no read when it is current, and nothing lost when it is stale", async () => {
    await docs.insertOne({ _id: "k", count: 1, tags: [] });
    const known = (await docs.findOne({ _id: "k" })) as Doc;
    const seen: number[] = [];
    const increment = (d: Doc) => {
      seen.push(d.count);
      return { set: { count: d.count + 1 }, unset: [] };
    };
    expect(await update("k", increment, 60_000, { known })).toMatchObject({ count: 2, version: 1 });
    // The copy is now stale (version 0, count 1): its claim is lost, the newest state is read and
    // the change made on it.
    expect(await update("k", increment, 60_000, { known })).toMatchObject({ count: 3, version: 2 });
    expect(seen).toEqual([1, 1, 2]);
    expect(await docs.findOne({ _id: "k" })).toMatchObject({ count: 3, version: 2 });
  });

  it("a winner that stalled past half the roll-forward age writes only onto the version it claimed", async () => {
    await docs.insertOne({ _id: "s", count: 1, tags: [] });
    // The writer pauses between its claim and its write (its clock jumps 40 s); meanwhile another
    // writer rolled its claim forward and moved the document on to version 2.
    let calls = 0;
    const start = Date.now();
    const stalled = () => new Date(start + (calls++ === 0 ? 0 : 40_000));
    let raced = false;
    const racing = new Proxy(docs, {
      get(target, prop) {
        if (prop === "updateOne" && !raced) {
          return async (filter: object, change: object) => {
            raced = true;
            await target.updateOne({ _id: "s" }, { $set: { count: 2, status: "paused", version: 2 } });
            return target.updateOne(filter as never, change);
          };
        }
        const value = Reflect.get(target, prop);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    const written = await versionedUpdate<Doc>({
      docs: racing,
      versions,
      id: "s",
      change: (d) => ({ set: { count: d.count + 1 }, unset: [] }),
      now: stalled,
      rollForwardAfterMs: 60_000,
    });
    // The late write did not land on version 2 (by `_id` alone it would have set it back to 1).
    expect(raced).toBe(true);
    expect(written).toMatchObject({ count: 2, status: "paused", version: 2 });
    expect(await docs.findOne({ _id: "s" })).toMatchObject({ count: 2, status: "paused", version: 2 });
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

/**
 * The RunStore contract against both adapters; the MongoDB one on the server from the global setup
 * (MONGODB_URI or FerretDB), never skipped.
 */
import { randomBytes } from "node:crypto";
import { MongoClient } from "mongodb";
import { inject } from "vitest";
import { createMemoryRunStore } from "../src/scheduler/memory-run-store.ts";
import { createMongoRunStore } from "../src/scheduler/mongo-run-store.ts";
import { describeRunStoreContract } from "./run-store.contract.ts";

const uri = inject("mongoUri");
const runId = randomBytes(3).toString("hex");
let databases = 0;

describeRunStoreContract("memory", async () => {
  const store = createMemoryRunStore();
  return { store, cleanup: () => store.close() };
});

describeRunStoreContract("mongo", async () => {
  const client = new MongoClient(uri, { serverSelectionTimeoutMS: 2000 });
  const db = client.db(`run_store_test_${runId}_${++databases}`);
  const store = createMongoRunStore({ db, guard: (op) => op() });
  return {
    store,
    cleanup: async () => {
      try {
        await db.dropDatabase();
      } finally {
        await client.close();
      }
    },
  };
});

/**
 * The RunStore contract against both adapters; the MongoDB one on the server from the global setup
 * (MONGODB_URI or FerretDB), never skipped.
 */
import { randomBytes } from "node:crypto";
import { type CommandStartedEvent, MongoClient } from "mongodb";
import { expect, inject, it } from "vitest";
import { createMemoryRunStore } from "../src/scheduler/memory-run-store.ts";
import { createMongoRunStore } from "../src/scheduler/mongo-run-store.ts";
import type { Lease, RunRecord } from "../src/scheduler/run-store.ts";
import { runIdOf } from "../src/scheduler/run-store.ts";
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

it("on the scheduler's path, every read and write names one `_id` (all FerretDB pushes down) and nothing scans", async () => {
  const client = new MongoClient(uri, { serverSelectionTimeoutMS: 2000, monitorCommands: true });
  const db = client.db(`run_store_test_${runId}_ids`);
  const store = createMongoRunStore({ db, guard: (op) => op() });
  try {
    const T0 = new Date("2031-03-01T10:00:00.000Z");
    const slot = { agentId: "agent-ids", owner: "o", scheduledAt: T0 };
    // A run the hour before, so that the day has a success to read.
    const before = { ...slot, scheduledAt: new Date(T0.getTime() - 3_600_000) };
    const earlier = (await store.claim(before, {
      worker: "w",
      now: before.scheduledAt,
      leaseMs: 10_000,
    })) as Lease;
    const settle = (lease: Lease, at: Date, today: readonly RunRecord[]) =>
      store.record(
        lease,
        {
          ...lease,
          runId: runIdOf(lease, 1),
          attempt: 1,
          startedAt: at,
          finishedAt: at,
          outcome: "succeeded",
          result: { usdValue: 1 },
        },
        { now: at, settles: true, today },
      );
    await settle(earlier, before.scheduledAt, []);
    const commands: CommandStartedEvent[] = [];
    client.on("commandStarted", (event) => commands.push(event));
    const lease = (await store.claim(slot, { worker: "w", now: T0, leaseMs: 10_000 })) as Lease;
    const today = await store.succeededToday(slot, before.scheduledAt);
    expect(today).toHaveLength(1);
    const tx = { signature: "sig", lastValidBlockHeight: 10n, transaction: "AQID" };
    expect(await store.recordTransaction(lease, tx, { now: T0 })).toBe("recorded");
    const renewed = (await store.renew(lease, { now: T0, leaseMs: 10_000 })) as Lease;
    expect(await settle(renewed, T0, today)).toBe("recorded");
    const crud = commands.filter((e) =>
      ["find", "update", "delete", "aggregate", "count"].includes(e.commandName),
    );
    for (const event of crud) {
      const filters =
        event.commandName === "update"
          ? (event.command.updates as { q: object }[]).map((u) => u.q)
          : event.commandName === "delete"
            ? (event.command.deletes as { q: object }[]).map((d) => d.q)
            : [event.command.filter ?? event.command.query];
      for (const filter of filters) {
        expect(Object.keys(filter ?? {}), `${event.commandName} ${JSON.stringify(filter)}`).toEqual(["_id"]);
        expect(typeof (filter as { _id: unknown })._id).toBe("string");
      }
    }
    // The claim, the day's successes (kept by the run of the slot before), the kept transaction
    // and the lease check after it, the renewal (a check and the update), the settle (the fence
    // and the run in one insert): seven commands.
    expect(commands.map((e) => `${e.commandName} ${e.command[e.commandName]}`)).toEqual([
      "insert agent_run_claims",
      "find agent_runs",
      "insert agent_run_transactions",
      "find agent_run_claims",
      "find agent_run_claims",
      "update agent_run_claims",
      "insert agent_runs",
    ]);
  } finally {
    await db.dropDatabase();
    await client.close();
  }
});

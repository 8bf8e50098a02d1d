/**
 * Work the service abandons does not keep running on the database: every query that can scan
 * (lists, counts, due agents, run history) carries maxTimeMS, so the server stops it
 * when the caller has stopped waiting. Checked on the commands that really reach the server. And a
 * read stops as soon as the caller's signal aborts.
 */
import { randomBytes } from "node:crypto";
import type { CommandStartedEvent } from "mongodb";
import { expect, inject, it } from "vitest";
import { newAgentId } from "../src/agent/agent-id.ts";
import { createMongoAgentStore } from "../src/agent/mongo-agent-store.ts";
import { createMongoRunStore } from "../src/scheduler/mongo-run-store.ts";
import { startFerretdb } from "./support/ferretdb.ts";

it("sends maxTimeMS with every query that can scan", async () => {
  const store = await createMongoAgentStore({
    uri: inject("mongoUri"),
    dbName: `bounds_${randomBytes(3).toString("hex")}`,
    operationTimeoutMS: 4321,
    monitorCommands: true,
  });
  const runs = createMongoRunStore({ db: store.db, guard: store.guard, maxTimeMS: 4321 });
  const seen: CommandStartedEvent[] = [];
  store.client.on("commandStarted", (event) => seen.push(event));
  try {
    const record = {
      agentId: newAgentId(),
      owner: "o",
      type: "transfer" as const,
      status: "pending" as const,
      config: {},
      createdAt: new Date(),
      nextRunAt: new Date(),
    };
    await store.create({ record, idempotencyKey: "k", fingerprint: "f" });
    await store.list("o", { limit: 10, offset: 0 });
    await store.due(new Date(), 5);
    const slot = { agentId: record.agentId, owner: "o", scheduledAt: new Date() };
    await runs.claim(slot, { worker: "w", now: new Date(), leaseMs: 1000 });
    await runs.list("o", record.agentId, { limit: 10, offset: 0 });
    // The day's successes from the history: the slot before kept none.
    await runs.succeededToday(slot, new Date(slot.scheduledAt.getTime() - 1));
    await runs.succeededSince("o", record.agentId, new Date(0));
    const scans = seen.filter(
      (e) =>
        e.commandName === "aggregate" ||
        (e.commandName === "find" && (e.command.sort !== undefined || !("_id" in (e.command.filter ?? {})))),
    );
    expect(scans.length).toBeGreaterThanOrEqual(7);
    for (const event of scans) {
      expect(event.command.maxTimeMS, `${event.commandName} ${JSON.stringify(event.command.filter)}`).toBe(
        4321,
      );
    }
  } finally {
    await store.db.dropDatabase();
    await store.close();
  }
});

it("a read stops when the caller's signal aborts, not when the operation timeout runs out", async () => {
  const db = await startFerretdb();
  const store = await createMongoAgentStore({
    uri: db.uri,
    dbName: "bounds_signal",
    operationTimeoutMS: 10_000,
  });
  try {
    await store.get("o", newAgentId()); // connected, indexes made
    await db.pause(); // the database hangs: nothing answers
    const signal = AbortSignal.timeout(100);
    const error = await store.get("o", newAgentId(), { signal }).then(
      () => undefined,
      (e: unknown) => e,
    );
    // The caller's own reason (its deadline), well before the store's 10 s bound would answer.
    expect(error).toBe(signal.reason);
    const listError = await store.list("o", { limit: 10, offset: 0, signal: AbortSignal.timeout(100) }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect((listError as Error).name).toBe("TimeoutError");
  } finally {
    db.resume();
    await store.close();
    await db.stop();
  }
});

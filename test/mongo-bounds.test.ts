/**
 * Work the service abandons does not keep running on the database: every query that can scan
 * (lists, counts, due agents, key lookups, run history) carries maxTimeMS, so the server stops it
 * when the caller has stopped waiting. Checked on the commands that really reach the server.
 */
import { randomBytes } from "node:crypto";
import type { CommandStartedEvent } from "mongodb";
import { expect, inject, it } from "vitest";
import { newAgentId } from "../src/agent/agent-id.ts";
import { createMongoAgentStore } from "../src/agent/mongo-agent-store.ts";
import { createMongoRunStore } from "../src/scheduler/mongo-run-store.ts";

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
    await runs.attempts(slot);
    await runs.list("o", record.agentId, { limit: 10, offset: 0 });
    const scans = seen.filter(
      (e) =>
        e.commandName === "aggregate" ||
        (e.commandName === "find" && (e.command.sort !== undefined || !("_id" in (e.command.filter ?? {})))),
    );
    expect(scans.length).toBeGreaterThanOrEqual(6);
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

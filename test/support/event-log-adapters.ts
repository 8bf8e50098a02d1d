import { randomBytes } from "node:crypto";
import { MongoClient } from "mongodb";
import type { EventLog } from "../../src/events/event-log.ts";
import { createMemoryEventLog } from "../../src/events/memory-event-log.ts";
import { createMongoEventLog } from "../../src/events/mongo-event-log.ts";

/** `count` event logs over one store, each as a replica would hold it (its own client, for MongoDB). */
export type MakeEventLogs = (count: number) => Promise<EventLog[]>;

/**
 * Both event log adapters, for `describe.each`: memory, and MongoDB at `uri` (a fresh database
 * per call, dropped through `cleanup`).
 */
export function eventLogAdapters(
  uri: string,
  prefix: string,
  cleanup: (undo: () => Promise<void>) => void,
): [string, MakeEventLogs][] {
  const runId = randomBytes(3).toString("hex");
  let databases = 0;
  return [
    [
      "memory",
      async (count) => {
        const log = createMemoryEventLog();
        return Array.from({ length: count }, () => log);
      },
    ],
    [
      "mongo",
      async (count) => {
        const dbName = `${prefix}_${runId}_${++databases}`;
        const clients = Array.from(
          { length: count },
          () => new MongoClient(uri, { serverSelectionTimeoutMS: 2000 }),
        );
        cleanup(async () => {
          await clients[0]?.db(dbName).dropDatabase();
          await Promise.all(clients.map((c) => c.close()));
        });
        return clients.map((client) => createMongoEventLog({ db: client.db(dbName) }));
      },
    ],
  ];
}

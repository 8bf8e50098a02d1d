import type { CommandStartedEvent, MongoClient } from "mongodb";
import { Counter, type Registry } from "prom-client";

/**
 * Every command the MongoDB driver sends, by command name and collection, from its command
 * monitoring events (the client must be made with `monitorCommands: true`): what the stores cost
 * the database, whatever the server. Dividing the count over a load by the work done in it (agent
 * runs, calls) gives the commands per unit of work, which the bench reports for the scheduler.
 * The driver's own handshakes and heartbeats are server monitoring, not commands, and are not
 * counted; `collection` is empty for commands that name none (ping, endSessions).
 */
export function registerMongoCommandMetrics(client: MongoClient, registry: Registry): void {
  /** `command\0collection` -> commands started; plain numbers, read when scraped. */
  const counts = new Map<string, number>();
  client.on("commandStarted", (event: CommandStartedEvent) => {
    const key = `${event.commandName}\0${collectionOf(event)}`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  });
  new Counter({
    name: "mongodb_commands_total",
    help: "Commands the MongoDB driver sent, by command and collection.",
    labelNames: ["command", "collection"] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const [key, n] of counts) {
        const [command = "", collection = ""] = key.split("\0");
        this.inc({ command, collection }, n);
      }
    },
  });
}

/** The collection a command names: its first field's value for CRUD commands, `collection` for getMore. */
function collectionOf(event: CommandStartedEvent): string {
  const named = event.commandName === "getMore" ? event.command.collection : event.command[event.commandName];
  return typeof named === "string" ? named : "";
}

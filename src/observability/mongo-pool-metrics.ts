import type { MongoClient } from "mongodb";
import { Counter, Gauge, type Registry } from "prom-client";

/**
 * The MongoDB driver's connection pool, from its connection monitoring (CMAP) events, which every
 * MongoClient emits without extra options: connections open and in use (checked out by an
 * operation), summed over the servers of the deployment, and failed checkouts (pool exhausted,
 * server down). A pool whose in-use count sits at MONGODB_MAX_POOL_SIZE is the sign to raise it.
 */
export function registerMongoPoolMetrics(client: MongoClient, registry: Registry): void {
  let open = 0;
  let inUse = 0;
  client.on("connectionCreated", () => open++);
  client.on("connectionClosed", () => {
    open = Math.max(0, open - 1);
  });
  client.on("connectionCheckedOut", () => inUse++);
  client.on("connectionCheckedIn", () => {
    inUse = Math.max(0, inUse - 1);
  });
  const failures = new Counter({
    name: "mongodb_pool_checkout_failures_total",
    help: "Connection checkouts from the MongoDB pool that failed, by reason.",
    labelNames: ["reason"] as const,
    registers: [registry],
  });
  client.on("connectionCheckOutFailed", (event) => failures.inc({ reason: event.reason }));
  new Gauge({
    name: "mongodb_pool_connections",
    help: "Connections in the MongoDB driver's pool: open (created, not closed) and in_use (checked out).",
    labelNames: ["state"] as const,
    registers: [registry],
    collect() {
      this.set({ state: "open" }, open);
      this.set({ state: "in_use" }, inUse);
    },
  });
}

/**
 * The trigger orders' watch of this replica (src/kinds/trigger/trigger-watch.ts), wired: the
 * service's price source, its settings, a poll of the scheduler as soon as an order fires, and
 * the metrics of what it saw.
 */
import { Counter, Gauge, type Registry } from "prom-client";
import type { AppContext } from "../app-context.ts";
import type { Config } from "../config.ts";
import { createTriggerWatch, type TriggerWatch } from "../kinds/trigger/trigger-watch.ts";
import type { Logger } from "../logger.ts";
import type { Scheduler } from "../scheduler/scheduler.ts";

export function createServiceTriggerWatch(
  config: Config,
  logger: Logger,
  registry: Registry,
  context: AppContext,
  scheduler: Pick<Scheduler, "wake">,
): TriggerWatch | undefined {
  if (context.kinds.get("trigger") === undefined) return undefined;
  const fired = new Counter({
    name: "trigger_orders_fired_total",
    help: "Trigger orders whose firing this replica set (one per order and firing, across replicas).",
    registers: [registry],
  });
  const observed = new Counter({
    name: "trigger_price_observations_total",
    help: "Looks at a watched token's reference price, by whether a fresh one was had (stale or absent prices fire nothing).",
    labelNames: ["fresh"],
    registers: [registry],
  });
  const mints = new Map(context.catalog.tokens.map((t) => [t.symbol, t.mint]));
  const watch = createTriggerWatch({
    type: "trigger",
    agents: context.agentStore,
    sources: [
      { name: config.prices.jupiterUrl === undefined ? "catalog" : "jupiter", prices: context.prices },
    ],
    sightings: context.triggerSightings,
    mintOf: (symbol) => mints.get(symbol),
    intervalMs: config.prices.watchIntervalMs,
    refreshMs: config.triggers.refreshMs,
    ttlMs: config.prices.ttlMs,
    maxWatched: config.triggers.maxWatched,
    confirmations: config.triggers.confirmations,
    holdMs: config.triggers.holdMs,
    onFired: () => {
      fired.inc();
      // The firing's slot is due now: poll for it rather than wait for the next interval.
      scheduler.wake();
    },
    onError: (error, what) => logger.warn({ err: error }, what),
    onObserved: (fresh) => observed.inc({ fresh: String(fresh) }),
  });
  new Gauge({
    name: "trigger_legs_watched",
    help: "Trigger order legs this replica watches.",
    registers: [registry],
    collect() {
      this.set(watch.size());
    },
  });
  return watch;
}

/**
 * The trigger orders' watch of this replica (src/kinds/trigger/trigger-watch.ts), wired: the price
 * sources TRIGGER_PRICE_SOURCES names (the service's own, Pyth's), its settings, a poll of the
 * scheduler as soon as an order fires, and the metrics of what it saw.
 */
import { Counter, Gauge, type Registry } from "prom-client";
import type { AppContext } from "../app-context.ts";
import type { Config } from "../config.ts";
import {
  createTriggerWatch,
  type TriggerPriceSource,
  type TriggerWatch,
} from "../kinds/trigger/trigger-watch.ts";
import type { Logger } from "../logger.ts";
import type { UpstreamMetrics } from "../observability/upstream-metrics.ts";
import type { Scheduler } from "../scheduler/scheduler.ts";
import { createPythPrices } from "./service-token-sources.ts";

export function createServiceTriggerWatch(
  config: Config,
  logger: Logger,
  registry: Registry,
  context: AppContext,
  scheduler: Pick<Scheduler, "wake">,
  upstreamMetrics: UpstreamMetrics,
): TriggerWatch | undefined {
  if (context.kinds.get("trigger") === undefined) return undefined;
  const sources = triggerPriceSources(config, logger, context, upstreamMetrics);
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
    sources,
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

/**
 * TRIGGER_PRICE_SOURCES as the watch takes them: `prices`, the service's own source (named for what
 * it is: Jupiter's or the catalog's), and `pyth`. The configuration made sure Pyth's are set when
 * it is named.
 */
function triggerPriceSources(
  config: Config,
  logger: Logger,
  context: AppContext,
  upstreamMetrics: UpstreamMetrics,
): TriggerPriceSource[] {
  return config.triggers.priceSources.map((name) => {
    if (name === "prices") {
      return { name: config.prices.jupiterUrl === undefined ? "catalog" : "jupiter", prices: context.prices };
    }
    const prices = createPythPrices(config, logger, context.catalog, upstreamMetrics);
    if (prices === undefined) throw new Error("TRIGGER_PRICE_SOURCES names pyth without PYTH_HERMES_URL");
    return { name: "pyth", prices };
  });
}

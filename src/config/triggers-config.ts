import type { ConfigReader } from "./config-reader.ts";
import type { PricesConfig } from "./prices-config.ts";

/**
 * Where a trigger order's reference price comes from: `prices`, the service's own price source
 * (Jupiter's with JUPITER_API_URL, else the local pools or the catalog), and `pyth`, Pyth Hermes.
 */
export const TRIGGER_PRICE_SOURCE_NAMES = ["prices", "pyth"] as const;
export type TriggerPriceSourceName = (typeof TRIGGER_PRICE_SOURCE_NAMES)[number];

/** Trigger orders: how long they may wait, what they must be worth, and how their price is held. */
export interface TriggersConfig {
  /** TRIGGER_MAX_LIFETIME_MS: how far ahead an order's expiresAt may be. */
  readonly maxLifetimeMs: number;
  /** TRIGGER_MIN_USD: an order worth less than this at creation is refused. */
  readonly minUsd: number;
  /** TRIGGER_CONFIRMATIONS: consecutive fresh observations on which the condition must hold. */
  readonly confirmations: number;
  /** TRIGGER_HOLD_MS: the least time between two observations that count. */
  readonly holdMs: number;
  /** TRIGGER_REFRESH_MS: how often a replica reads the open orders again (others' new ones, changes). */
  readonly refreshMs: number;
  /** TRIGGER_MAX_WATCHED: open orders one replica watches at most; past it, the oldest ids first. */
  readonly maxWatched: number;
  /** TRIGGER_PRICE_SOURCES: the sources whose fresh prices' median is the reference, each once. */
  readonly priceSources: readonly TriggerPriceSourceName[];
}

export function readTriggers(reader: ConfigReader, prices: PricesConfig): TriggersConfig {
  const { read, int, problems } = reader;
  const minUsdText = read("TRIGGER_MIN_USD");
  const minUsd = Number(minUsdText);
  if (!/^\d+(\.\d+)?$/.test(minUsdText) || minUsd > 1_000_000_000) {
    problems.push(
      `TRIGGER_MIN_USD must be a decimal number of dollars from 0 to 1000000000 (got "${minUsdText}")`,
    );
  }
  return {
    maxLifetimeMs: int("TRIGGER_MAX_LIFETIME_MS", 1000, 365 * 86_400_000),
    minUsd,
    confirmations: int("TRIGGER_CONFIRMATIONS", 1, 100),
    holdMs: int("TRIGGER_HOLD_MS", 0, 3_600_000),
    refreshMs: int("TRIGGER_REFRESH_MS", 100, 3_600_000),
    maxWatched: int("TRIGGER_MAX_WATCHED", 1, 10_000_000),
    priceSources: readPriceSources(read("TRIGGER_PRICE_SOURCES"), prices, problems),
  };
}

function readPriceSources(text: string, prices: PricesConfig, problems: string[]): TriggerPriceSourceName[] {
  const names = [...new Set(text.split(",").map((name) => name.trim().toLowerCase()))];
  const unknown = names.find((name) => !(TRIGGER_PRICE_SOURCE_NAMES as readonly string[]).includes(name));
  if (unknown !== undefined) {
    problems.push(
      `TRIGGER_PRICE_SOURCES must be a comma-separated list of ${TRIGGER_PRICE_SOURCE_NAMES.join(" and ")} (got "${unknown.slice(0, 32)}")`,
    );
    return ["prices"];
  }
  if (names.includes("pyth")) {
    if (prices.pythHermesUrl === undefined)
      problems.push("TRIGGER_PRICE_SOURCES names pyth: PYTH_HERMES_URL is required");
    if (prices.pythFeeds.length === 0)
      problems.push("TRIGGER_PRICE_SOURCES names pyth: PYTH_PRICE_FEEDS is required (no feed is built in)");
  }
  return names as TriggerPriceSourceName[];
}

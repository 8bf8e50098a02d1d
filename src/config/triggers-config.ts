import type { ConfigReader } from "./config-reader.ts";

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
}

export function readTriggers(reader: ConfigReader): TriggersConfig {
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
  };
}

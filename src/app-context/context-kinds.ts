/**
 * The agent kinds this service runs (src/kinds/built-in-kinds.ts), the catalog's mints by symbol
 * that every kind's runs use, and what the trigger kind
 * needs of the service: its rules (TRIGGER_*), the catalog's stablecoins, fresh prices, and the
 * sightings its watch shares with GetAgent.
 */
import type { Config } from "../config.ts";
import type { AgentKinds } from "../kinds/agent-kinds.ts";
import { builtInKinds } from "../kinds/built-in-kinds.ts";
import { createTriggerSightings, type TriggerSightings } from "../kinds/trigger/trigger-sightings.ts";
import type { Catalog } from "../token/catalog.ts";
import type { PriceSource } from "../token/token-source.ts";

export function createContextKinds(options: {
  readonly config: Config;
  readonly catalog: Catalog;
  readonly prices: PriceSource;
  readonly now?: (() => Date) | undefined;
}): {
  kinds: AgentKinds;
  triggerSightings: TriggerSightings;
  mintOf: (symbol: string) => string | undefined;
} {
  const { config, catalog, prices } = options;
  const mints = new Map(catalog.tokens.map((t) => [t.symbol, t.mint]));
  const mintOf = (symbol: string) => mints.get(symbol);
  const triggerSightings = createTriggerSightings();
  const stablecoins = new Set(
    catalog.tokens.filter((t) => t.tags.includes("stablecoin")).map((t) => t.symbol),
  );
  const kinds = builtInKinds({
    trigger: {
      maxLifetimeMs: config.triggers.maxLifetimeMs,
      minUsd: config.triggers.minUsd,
      now: options.now ?? (() => new Date()),
      isStablecoin: (symbol) => stablecoins.has(symbol),
      usdPrice: async (symbol) => {
        const mint = mintOf(symbol);
        if (mint === undefined) return undefined;
        const [price] = await prices.pricesOf([mint], { fresh: true });
        return price === undefined || price.unpriced ? undefined : price.price;
      },
      sightings: triggerSightings,
      mintOf,
    },
  });
  return { kinds, triggerSightings, mintOf };
}

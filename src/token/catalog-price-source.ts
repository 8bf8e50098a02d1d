import type { Catalog } from "./catalog.ts";
import type { PriceSource, TokenPrice } from "./token-source.ts";

/**
 * Prices from the embedded catalog's snapshot: the default price source, so the service answers
 * without any network. Everything is built once and frozen; calls only hand it out, as this is
 * the service's hottest path and the data never changes.
 */
export function createCatalogPriceSource(options: { catalog: Catalog }): PriceSource {
  const { catalog } = options;
  // Fresh objects with exactly the interface's fields, so no caller ever sees the raw catalog.
  const prices: readonly TokenPrice[] = Object.freeze(
    catalog.tokens.map(({ mint, symbol, price, change24h }) =>
      Object.freeze({ mint, symbol, price, change24h }),
    ),
  );
  const symbols = new Map(catalog.tokens.map((t) => [t.symbol.toLowerCase(), t.symbol]));
  return {
    listPrices: () => Promise.resolve(prices),
    canonicalSymbol: (symbol) => Promise.resolve(symbols.get(symbol.toLowerCase())),
  };
}

import type { Catalog } from "./catalog.ts";
import type { PriceSource, TokenPrice } from "./token-source.ts";

/**
 * Prices from the embedded catalog's snapshot: the default price source, so the service answers
 * without any network. Every entry is built once and frozen (`asOf` is when the snapshot was
 * taken), and the watchlist's answer is one frozen array: calls only hand them out, as this is the
 * service's hottest path and the data never changes.
 */
export function createCatalogPriceSource(options: {
  catalog: Catalog;
  /** PRICE_WATCHLIST; undefined: the catalog's tokens, in its order. */
  watchlist?: readonly string[];
}): PriceSource {
  const { catalog } = options;
  const asOf = new Date(catalog.asOf);
  const symbols = new Map(catalog.tokens.map((t) => [t.mint, t.symbol]));
  // Fresh objects with exactly the interface's fields, so no caller ever sees the raw catalog.
  const byMint = new Map<string, TokenPrice>(
    catalog.tokens.map(({ mint, symbol, price, change24h }) => [
      mint,
      Object.freeze({ mint, symbol, price, change24h, asOf, slot: 0, unpriced: false }),
    ]),
  );
  const entry = (mint: string): TokenPrice =>
    byMint.get(mint) ??
    Object.freeze({
      mint,
      symbol: symbols.get(mint) ?? "",
      price: 0,
      change24h: 0,
      asOf,
      slot: 0,
      unpriced: true,
    });
  const watchlist = Object.freeze([...(options.watchlist ?? catalog.tokens.map((t) => t.mint))]);
  const watched = Object.freeze(watchlist.map(entry));
  return {
    watchlist,
    pricesOf: (mints) => Promise.resolve(mints === watchlist ? watched : mints.map(entry)),
  };
}

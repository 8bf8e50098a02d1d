import type { Catalog } from "./catalog.ts";
import type { PriceSource, TokenPrice } from "./token-source.ts";

/**
 * Prices from the embedded catalog's snapshot: the default price source, so the service answers
 * without any network. Every entry is built once and frozen (`asOf` is when the snapshot was
 * taken), and the watchlist's answer is one frozen array: calls only hand them out, as this is the
 * service's hottest path and the data never changes. With a tick (`tickMs`), each entry is made
 * once per mint per tick instead.
 */
export function createCatalogPriceSource(options: {
  catalog: Catalog;
  /** PRICE_WATCHLIST; undefined: the catalog's tokens, in its order. */
  watchlist?: readonly string[];
  /**
   * CATALOG_PRICE_TICK_MS: above 0, prices take one step of a small deterministic random walk
   * (each step within ±0.5 %) every `tickMs` after the source was made, for demos and for tests of
   * price streams. 0: the snapshot, unchanged.
   */
  tickMs?: number;
  now?: () => number;
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
  const tickMs = options.tickMs ?? 0;
  if (tickMs <= 0) {
    return {
      watchlist,
      pricesOf: (mints) => Promise.resolve(mints === watchlist ? watched : mints.map(entry)),
    };
  }
  const now = options.now ?? Date.now;
  const start = now();
  /** The walk so far of each mint: its price after `steps` steps. */
  const walks = new Map<string, { steps: number; price: number }>();
  /** The entries of the current tick, made once per mint per tick. */
  let tick = -1;
  let current = new Map<string, TokenPrice>();
  const moved = (base: TokenPrice, k: number): TokenPrice => {
    if (base.unpriced) return base;
    let walk = walks.get(base.mint);
    if (walk === undefined || walk.steps > k) walk = { steps: 0, price: base.price };
    let price = walk.price;
    for (let step = walk.steps + 1; step <= k; step++) price *= 1 + (unitNoise(base.mint, step) - 0.5) / 100;
    walks.set(base.mint, { steps: k, price });
    return Object.freeze({ ...base, price: roundTo(price, base.price), asOf: new Date(start + k * tickMs) });
  };
  const walked = (mint: string): TokenPrice => {
    const k = Math.floor((now() - start) / tickMs);
    if (k !== tick) {
      tick = k;
      current = new Map();
    }
    let found = current.get(mint);
    if (found === undefined) {
      found = moved(entry(mint), k);
      current.set(mint, found);
    }
    return found;
  };
  return { watchlist, pricesOf: (mints) => Promise.resolve(mints.map(walked)) };
}

/** A number in [0, 1) fixed by the mint and the step: the same walk in every process. */
function unitNoise(mint: string, step: number): number {
  // FNV-1a over the mint and the step, then a final avalanche (murmur3's fmix32).
  let h = 0x811c9dc5;
  const text = `${mint}:${step}`;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return (h >>> 0) / 2 ** 32;
}

/** Keeps as many significant digits as a price of this size deserves (8), no float noise. */
function roundTo(price: number, reference: number): number {
  const digits = Math.max(0, 8 - Math.ceil(Math.log10(Math.abs(reference) || 1)));
  return Number(price.toFixed(Math.min(digits, 12)));
}

import { createBatchLoader } from "../upstream/batch-loader.ts";
import { type CacheLookup, createSwrCache } from "../upstream/swr-cache.ts";
import { type JupiterApi, PRICE_IDS_PER_REQUEST } from "./jupiter-api.ts";
import type { PriceSource, TokenList, TokenListing, TokenPrice } from "./token-source.ts";

export interface JupiterPriceSourceOptions {
  readonly api: JupiterApi;
  /** Symbols of the priced tokens. */
  readonly tokenList: TokenList;
  /** Symbols used when the token list cannot answer (the catalog's). */
  readonly fallbackSymbols: ReadonlyMap<string, string>;
  readonly watchlist: readonly string[];
  /** PRICE_TTL_MS, PRICE_MAX_STALE_MS, PRICE_CACHE_ENTRIES. */
  readonly ttlMs: number;
  readonly maxStaleMs: number;
  readonly max: number;
  readonly onLookup?: (lookup: CacheLookup, count: number) => void;
  /** Told when prices were served without the token list's symbols (it could not answer). */
  readonly onTokenListFailure?: (error: unknown) => void;
}

/**
 * Prices from Jupiter's Price API v3, one cache entry per mint. Mints missing from the cache go
 * upstream together (50 to a request), one request per mint in flight however many callers want
 * it; a cached price is fresh for `ttlMs`, then served while one request revalidates it, and
 * served while Jupiter fails for up to `maxStaleMs` after it was obtained, then no more
 * (unavailable). Asked for fresh prices only (a swap's reference), a stale one is refreshed and
 * waited for, never served: while Jupiter fails, such a call is unavailable, saying so. A mint Jupiter leaves out (no reliable price) is cached as unpriced like any
 * other answer, so asking again does not call Jupiter again until the entry is stale.
 *
 * Each entry is one frozen object for as long as it is fresh, so the RPC layer's per-object
 * message cache reuses its encoding across calls.
 */
export function createJupiterPriceSource(options: JupiterPriceSourceOptions): PriceSource {
  const { api, tokenList, fallbackSymbols } = options;
  const symbolsOf = async (mints: readonly string[]): Promise<ReadonlyMap<string, TokenListing>> => {
    try {
      return await tokenList.listingsOf(mints);
    } catch (error) {
      // A price is still worth serving without its symbol; the catalog's names the known tokens.
      options.onTokenListFailure?.(error);
      return new Map();
    }
  };
  const cache = createSwrCache<TokenPrice>({
    max: options.max,
    ttlMs: options.ttlMs,
    maxStaleMs: options.maxStaleMs,
    what: "the price of",
    ...(options.onLookup === undefined ? {} : { onLookup: options.onLookup }),
    load: createBatchLoader({
      maxBatch: PRICE_IDS_PER_REQUEST,
      load: async (mints) => {
        const [prices, listings] = await Promise.all([api.prices(mints), symbolsOf(mints)]);
        const asOf = new Date();
        return new Map(
          mints.map((mint) => {
            const symbol = listings.get(mint)?.symbol ?? fallbackSymbols.get(mint) ?? "";
            const price = prices.get(mint);
            const entry: TokenPrice =
              price === undefined
                ? { mint, symbol, price: 0, change24h: 0, asOf, slot: 0, unpriced: true }
                : {
                    mint,
                    symbol,
                    price: price.usdPrice,
                    change24h: price.priceChange24h,
                    asOf,
                    slot: price.blockId,
                    unpriced: false,
                  };
            return [mint, Object.freeze(entry)];
          }),
        );
      },
    }),
  });
  return {
    watchlist: Object.freeze([...options.watchlist]),
    async pricesOf(mints, query) {
      // Warm: every price fresh, answered without waiting on anything.
      const fresh = cache.freshAll(mints);
      if (fresh !== undefined) return fresh;
      let waits = false;
      const entries = mints.map((mint) => {
        const entry = cache.fresh(mint);
        if (entry !== undefined) return entry.value;
        waits = true;
        return cache.get(mint, { fresh: query?.fresh === true }).then(({ value }) => value);
      });
      return waits ? Promise.all(entries) : (entries as TokenPrice[]);
    },
  };
}

import { createBatchLoader } from "../upstream/batch-loader.ts";
import { type CacheLookup, createSwrCache } from "../upstream/swr-cache.ts";
import { type JupiterApi, type JupiterToken, SEARCH_MINTS_PER_REQUEST } from "./jupiter-api.ts";
import type { TokenList, TokenListing } from "./token-source.ts";

export interface JupiterTokenListOptions {
  readonly api: JupiterApi;
  /** How long a listing, a symbol's search and the verified list are trusted before a refresh. */
  readonly ttlMs: number;
  /** Mints and symbols kept. */
  readonly max: number;
  readonly onLookup?: (lookup: CacheLookup, count: number) => void;
}

/** The one key of the verified list's cache. */
const VERIFIED = "verified";

/**
 * Jupiter's token list. The verified list (`tag?query=verified`, thousands of tokens) is loaded
 * when the list is made and refreshed in the background once it is older than `ttlMs`; it answers
 * for most mints asked about. A mint it does not hold is looked up by a search for the mints
 * (batched, 100 to a request), and a symbol by a search for the symbol (every token with exactly
 * that symbol, case-insensitively, verified ones first, in Jupiter's order otherwise). Everything
 * is cached for `ttlMs`, and served stale while Jupiter fails: names and logos change rarely, and
 * an old name is better than none.
 */
export function createJupiterTokenList(options: JupiterTokenListOptions): TokenList {
  const { api, ttlMs, max } = options;
  let verified: ReadonlyMap<string, TokenListing> | undefined;
  const verifiedList = createSwrCache<ReadonlyMap<string, TokenListing>>({
    max: 1,
    ttlMs,
    maxStaleMs: Number.POSITIVE_INFINITY,
    what: "Jupiter's token list",
    load: async () => {
      const tokens = await api.verified();
      verified = new Map(tokens.map((t) => [t.id, listingOf(t)]));
      return verified;
    },
  });
  /** Starts a refresh when the verified list is stale (or not loaded yet); never waits for it. */
  const refreshVerified = () => {
    if (verifiedList.fresh(VERIFIED) === undefined) void verifiedList.get(VERIFIED).catch(() => {});
  };
  refreshVerified();

  const listings = createSwrCache<TokenListing | null>({
    max,
    ttlMs,
    maxStaleMs: Number.POSITIVE_INFINITY,
    what: "the token list's entry for",
    ...(options.onLookup === undefined ? {} : { onLookup: options.onLookup }),
    load: createBatchLoader({
      maxBatch: SEARCH_MINTS_PER_REQUEST,
      load: async (mints) => {
        const found = new Map((await api.search(mints.join(","))).map((t) => [t.id, listingOf(t)]));
        return new Map(mints.map((mint) => [mint, found.get(mint) ?? null]));
      },
    }),
  });
  const symbols = createSwrCache<readonly string[]>({
    max,
    ttlMs,
    maxStaleMs: Number.POSITIVE_INFINITY,
    what: "the token list's tokens with symbol",
    ...(options.onLookup === undefined ? {} : { onLookup: options.onLookup }),
    load: async (symbol) => {
      const matching = (await api.search(symbol)).filter((t) => t.symbol.toLowerCase() === symbol);
      for (const token of matching) listings.set(token.id, listingOf(token));
      // Array.prototype.sort is stable: Jupiter's order is kept within each group.
      return matching.sort((a, b) => Number(b.isVerified) - Number(a.isVerified)).map((t) => t.id);
    },
  });

  return {
    async listingsOf(mints) {
      refreshVerified();
      const known = new Map<string, TokenListing>();
      const lookups: Promise<void>[] = [];
      for (const mint of mints) {
        const listing = verified?.get(mint) ?? listings.fresh(mint)?.value;
        if (listing !== undefined) {
          if (listing !== null) known.set(mint, listing);
          continue;
        }
        lookups.push(
          listings.get(mint).then(({ value }) => {
            if (value !== null) known.set(mint, value);
          }),
        );
      }
      await Promise.all(lookups);
      return known;
    },
    async mintsWithSymbol(symbol) {
      return (await symbols.get(symbol.toLowerCase())).value;
    },
  };
}

function listingOf(token: JupiterToken): TokenListing {
  return Object.freeze({
    mint: token.id,
    symbol: token.symbol,
    name: token.name,
    logoURI: token.icon,
    tags: Object.freeze([...token.tags]),
    verified: token.isVerified,
  });
}

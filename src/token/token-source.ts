/**
 * The token ports: where token data comes from. A TokenSource reads a token's metadata and
 * transactions (the chain token source, `chain-token-source.ts`); a PriceSource prices mints (the
 * embedded catalog, `catalog-price-source.ts`, or Jupiter, `jupiter-price-source.ts`); a TokenList
 * names tokens, their logos and tags (the catalog, or Jupiter's, `jupiter-token-list.ts`). Inputs
 * reaching a source are already validated (see `token-queries.ts`). A source whose dependency
 * cannot answer throws UnavailableError; one whose caller's `signal` aborted rethrows its reason.
 */

export interface TokenPrice {
  readonly mint: string;
  /** The token list's symbol; "" when it does not know the mint. */
  readonly symbol: string;
  /** US dollars; 0 when unpriced. */
  readonly price: number;
  /** Percent over 24 hours; 0 when unpriced. */
  readonly change24h: number;
  /** When the service obtained this price (or learned there is none) from its source. */
  readonly asOf: Date;
  /** The slot the source priced the token at; 0 when it does not say. */
  readonly slot: number;
  /** True when the source has no reliable price for the mint. */
  readonly unpriced: boolean;
}

/** What the token list says of one token. */
export interface TokenListing {
  readonly mint: string;
  readonly symbol: string;
  readonly name: string;
  readonly logoURI: string;
  readonly tags: readonly string[];
  /** Vetted by the list's keeper (Jupiter's verified tag; every catalog token). */
  readonly verified: boolean;
}

export interface TokenList {
  /** Listings of these mints; a mint the list does not know is absent from the map. */
  listingsOf(mints: readonly string[]): Promise<ReadonlyMap<string, TokenListing>>;
  /** Mints of every listed token with this symbol (case-insensitive), verified tokens first. */
  mintsWithSymbol(symbol: string): Promise<readonly string[]>;
}

export interface TokenMetadata {
  readonly mint: string;
  readonly symbol: string;
  readonly name: string;
  readonly decimals: number;
  readonly logoURI: string;
  readonly tags: readonly string[];
}

export interface TokenTransaction {
  readonly signature: string;
  /** Seconds since the Unix epoch (0 when the chain does not know the block's time). */
  readonly blockTime: number;
  readonly amount: number;
  readonly sender: string;
  readonly recipient: string;
  readonly type: string;
}

export interface TransactionPageQuery {
  /** 1..100, already validated. */
  readonly limit: number;
  /** A signature of this token's transactions; only older ones (in newest-first order) are returned. */
  readonly before?: string;
}

/**
 * Result of a transaction page lookup: the source tells apart an unknown mint and an unknown cursor
 * so that the caller can answer not_found and invalid_argument respectively.
 */
export type TransactionPage =
  | { readonly kind: "page"; readonly transactions: readonly TokenTransaction[] }
  | { readonly kind: "unknown-mint" }
  | { readonly kind: "unknown-cursor" };

export interface TokenSource {
  /** One token's metadata, or undefined when there is no mint at that address. */
  getMetadata(mint: string, signal?: AbortSignal): Promise<TokenMetadata | undefined>;
  /** A page of a token's transactions, newest first in the chain's order (slot, then position). */
  listTransactions(mint: string, query: TransactionPageQuery, signal?: AbortSignal): Promise<TransactionPage>;
}

export interface PriceSource {
  /** The mints priced when a caller names none, in the order they are listed. */
  readonly watchlist: readonly string[];
  /** One entry per mint, in the order given (an unpriced one when the source has no price). */
  pricesOf(mints: readonly string[], query?: PriceQuery): Promise<readonly TokenPrice[]>;
}

export interface PriceQuery {
  /**
   * Only prices obtained within the source's freshness (PRICE_TTL_MS): a cached price older than
   * that is refreshed and waited for, and when it cannot be, the call throws UnavailableError
   * saying the price is stale, instead of serving it. For what decides a trade (a swap's reference
   * price); displays take stale prices, which say how old they are. A source that is not a cache
   * (the catalog's snapshot) answers as always.
   */
  readonly fresh?: boolean;
}

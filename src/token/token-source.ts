/**
 * The token ports: where token data comes from. A TokenSource reads a token's metadata and
 * transactions (the chain token source, `chain-token-source.ts`); a PriceSource lists prices and
 * knows the tokens' symbols (the embedded catalog, `catalog-price-source.ts`). Inputs reaching a
 * source are already validated (see `token-queries.ts`). A source whose dependency cannot answer
 * throws UnavailableError; one whose caller's `signal` aborted rethrows the signal's reason.
 */

export interface TokenPrice {
  readonly mint: string;
  readonly symbol: string;
  readonly price: number;
  readonly change24h: number;
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
  /** Every listed token's price, in a stable order (the same order on every call). */
  listPrices(): Promise<readonly TokenPrice[]>;
  /** The token list's spelling of a symbol (matched case-insensitively), or undefined if unknown. */
  canonicalSymbol(symbol: string): Promise<string | undefined>;
}

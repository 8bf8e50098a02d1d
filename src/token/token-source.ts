/**
 * The token source port: where token prices, metadata and transactions come from. The embedded
 * catalog implements it today; a live source (Solana RPC plus a price API) can replace it without
 * touching the RPC layer. Inputs reaching a source are already validated (see `token-queries.ts`).
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
  /** Seconds since the Unix epoch. */
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
  /** Every token's price, in a stable order (the same order on every call). */
  listPrices(): Promise<readonly TokenPrice[]>;
  /** One token's metadata, or undefined for an unknown mint. */
  getMetadata(mint: string): Promise<TokenMetadata | undefined>;
  /** A page of a token's transactions, newest first (blockTime descending, ties by signature). */
  listTransactions(mint: string, query: TransactionPageQuery): Promise<TransactionPage>;
  /** The catalog spelling of a token symbol (matched case-insensitively), or undefined if unknown. */
  canonicalSymbol(symbol: string): Promise<string | undefined>;
}

/**
 * The chain port: what the service reads from a Solana cluster, in plain values (base58 strings,
 * bigints), so that token code never sees @solana/kit or JSON-RPC. One adapter implements it
 * (`kit-chain.ts`) over two transports: HTTP to any cluster, or the embedded local chain in-process.
 *
 * Failures: a cluster that cannot answer throws UnavailableError (domain/errors.ts); a call whose
 * `signal` aborted rethrows the signal's reason, so the caller's deadline decides the code.
 */

/** One entry of an address's history, newest first as the cluster lists it. */
export interface SignatureInfo {
  readonly signature: string;
  readonly slot: bigint;
  /** Seconds since the Unix epoch; null when the cluster does not know it. */
  readonly blockTime: number | null;
  /** The transaction failed (it landed, paid its fee, and changed nothing else). */
  readonly failed: boolean;
}

/** One token account's balance before or after a transaction, as its meta records it. */
export interface TokenBalance {
  /** Index of the token account among the transaction's account keys. */
  readonly accountIndex: number;
  readonly mint: string;
  /** The wallet that owns the token account; undefined when the cluster did not record it. */
  readonly owner: string | undefined;
  /** Base units. */
  readonly amount: bigint;
  readonly decimals: number;
}

export interface ChainTransaction {
  readonly signature: string;
  readonly slot: bigint;
  readonly blockTime: number | null;
  readonly failed: boolean;
  /** Lamports. */
  readonly fee: bigint;
  /** Every account the transaction touched (static keys, then loaded ones); the first pays the fee. */
  readonly accountKeys: readonly string[];
  readonly preTokenBalances: readonly TokenBalance[];
  readonly postTokenBalances: readonly TokenBalance[];
}

export type TokenProgram = "spl-token" | "spl-token-2022";

/** Name, symbol and uri as a token's on-chain metadata holds them. */
export interface OnChainMetadata {
  readonly name: string;
  readonly symbol: string;
  readonly uri: string;
}

export interface MintAccount {
  readonly address: string;
  readonly program: TokenProgram;
  readonly decimals: number;
  /** Base units. */
  readonly supply: bigint;
  /** Token-2022's metadata extension, when the mint carries one. */
  readonly metadata: OnChainMetadata | undefined;
}

export interface SignatureQuery {
  /** Only entries older than this signature. */
  readonly before?: string;
  /** Only entries newer than this signature. */
  readonly until?: string;
  /** 1..1000. */
  readonly limit: number;
}

export interface Chain {
  /** The mint at `address`, or undefined when there is no account there or it is not a mint. */
  getMint(address: string, signal?: AbortSignal): Promise<MintAccount | undefined>;
  /** The Metaplex Token Metadata of a mint, or undefined when it has none. */
  getMetaplexMetadata(mint: string, signal?: AbortSignal): Promise<OnChainMetadata | undefined>;
  /** Signatures of transactions that name `address`, newest first. */
  getSignaturesForAddress(
    address: string,
    query: SignatureQuery,
    signal?: AbortSignal,
  ): Promise<readonly SignatureInfo[]>;
  /** A landed transaction, or undefined when the cluster does not know the signature. */
  getTransaction(signature: string, signal?: AbortSignal): Promise<ChainTransaction | undefined>;
  /** True when the cluster answers and says it is healthy. Never throws. */
  isHealthy(signal?: AbortSignal): Promise<boolean>;
}

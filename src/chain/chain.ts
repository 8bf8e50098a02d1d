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
  /**
   * The kinds of Token-2022 extensions the mint carries, as the program names them
   * (`TransferFeeConfig`, `TransferHook`, ...); empty for SPL Token.
   */
  readonly extensions: readonly string[];
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
  /** Lamports held by `address` (0 when there is no account there). */
  getBalance(address: string, signal?: AbortSignal): Promise<bigint>;
  /** True when the cluster answers and says it is healthy. Never throws. */
  isHealthy(signal?: AbortSignal): Promise<boolean>;
}

/** A token account as the transfer executor checks it before it signs. */
export interface TokenAccountState {
  readonly address: string;
  readonly mint: string;
  /** The wallet that owns it. */
  readonly owner: string;
  /** Base units. */
  readonly amount: bigint;
  /** The approved delegate, if any, and what it may still move (base units). */
  readonly delegate: string | undefined;
  readonly delegatedAmount: bigint;
  readonly frozen: boolean;
}

/** Any account as it is stored: lamports, owner program and data. */
export interface RawAccountState {
  readonly lamports: bigint;
  /** The program that owns it. */
  readonly program: string;
  readonly data: Uint8Array;
}

/** Signatures one getSignatureStatuses call may carry (the JSON-RPC method's own limit). */
export const MAX_STATUSES_PER_CALL = 256;

/** A simulation's answer (see TransferChain.simulateTransaction). */
export interface Simulated {
  readonly err: unknown;
  readonly logs: readonly string[];
  readonly unitsConsumed: bigint | undefined;
  readonly accounts: readonly (TokenAccountState | undefined)[];
  /** The same accounts whatever they hold (undefined: none there then, or the simulation failed). */
  readonly raw: readonly (RawAccountState | undefined)[];
  /**
   * With `replaceRecentBlockhash`: the blockhash the cluster simulated with (its latest) and the
   * last block height a transaction made with it can land at; undefined when it gave none.
   */
  readonly replacementBlockhash?: { readonly blockhash: string; readonly lastValidBlockHeight: bigint };
  /**
   * The fee payer's lamports just before and after the simulated transaction, on the very state
   * it was simulated on (Agave 3's preBalances[0] and postBalances[0]); undefined when the cluster
   * gives none. A read made before the simulation is stale by whatever landed in between.
   */
  readonly feePayerLamports?: { readonly before: bigint; readonly after: bigint };
}

/** What the cluster knows of a sent transaction. */
export interface SentStatus {
  readonly slot: bigint;
  /** The transaction's error in the cluster's JSON form, or null when it succeeded. */
  readonly err: unknown;
}

/**
 * The chain as the transfer executor writes to it: what it reads before signing, and sending
 * transactions and following them. Same failure rules as Chain.
 */
export interface TransferChain {
  getTokenAccount(address: string, signal?: AbortSignal): Promise<TokenAccountState | undefined>;
  /** Accounts as stored, in order (undefined: none there); at most 100 at once. */
  getAccounts(
    addresses: readonly string[],
    signal?: AbortSignal,
  ): Promise<readonly (RawAccountState | undefined)[]>;
  /**
   * Many token accounts in one read each 100 (getMultipleAccounts' limit), in the order asked;
   * undefined where there is no token account.
   */
  getTokenAccounts(
    addresses: readonly string[],
    signal?: AbortSignal,
  ): Promise<readonly (TokenAccountState | undefined)[]>;
  /** A recent blockhash and the last block height a transaction made with it can land at. */
  getLatestBlockhash(signal?: AbortSignal): Promise<{ blockhash: string; lastValidBlockHeight: bigint }>;
  getBlockHeight(signal?: AbortSignal): Promise<bigint>;
  /**
   * The statuses of transactions (undefined: the cluster does not know it). `searchHistory` asks
   * the cluster to look past its recent status cache, which costs it more: for transactions that
   * may be older than a few minutes.
   */
  getSignatureStatuses(
    signatures: readonly string[],
    signal?: AbortSignal,
    options?: { readonly searchHistory?: boolean },
  ): Promise<readonly (SentStatus | undefined)[]>;
  /**
   * What the transaction would do now: its error (null: none), its logs, the compute units it
   * used, and the token accounts named in `accounts` as they would be after it (undefined: no
   * token account there then, or the simulation failed). Whatever program ran, the accounts' end
   * state is the chain's own answer, which is what the swap executor checks before signing.
   * `replaceRecentBlockhash` simulates with the cluster's latest blockhash instead of the
   * transaction's, and answers it: one call for both a trial and the lifetime to sign with.
   */
  simulateTransaction(
    transaction: string,
    signal?: AbortSignal,
    options?: { readonly accounts?: readonly string[]; readonly replaceRecentBlockhash?: boolean },
  ): Promise<Simulated>;
  /**
   * Sends a signed transaction (base64). With `preflight`, the cluster simulates it first and
   * refuses one that would fail, throwing PreflightFailure with the transaction's error: such a
   * transaction was not sent and cannot land. Without, it is sent as is (to send again the same
   * bytes, which may have landed meanwhile).
   */
  sendTransaction(
    transaction: string,
    signal?: AbortSignal,
    options?: { readonly preflight?: boolean },
  ): Promise<void>;
}

/** The cluster's preflight simulation refused a transaction: it was not sent. */
export class PreflightFailure extends Error {
  override readonly name = "PreflightFailure";
  /** The transaction's error in the cluster's JSON form ("BlockhashNotFound", {InstructionError: …}). */
  readonly err: unknown;
  constructor(err: unknown) {
    super("the transaction failed its preflight simulation and was not sent");
    this.err = err;
  }
}

import type { SavedAccount } from "../state/chain-state.ts";
import type { TransactionError } from "./transaction-error.ts";

/**
 * A write the chain refused because its account data would pass its bound
 * (LOCAL_SOLANA_MAX_ACCOUNT_BYTES); nothing was written.
 */
export class AccountBytesExceededError extends Error {
  override readonly name = "AccountBytesExceededError";
  readonly max: number;
  readonly used: number;
  readonly growth: number;

  constructor(max: number, used: number, growth: number) {
    super(
      `the chain's account data would exceed its bound of ${max} bytes (LOCAL_SOLANA_MAX_ACCOUNT_BYTES): it holds ${used} bytes, and this adds ${growth}`,
    );
    this.max = max;
    this.used = used;
    this.growth = growth;
  }

  /**
   * The refusal as a transaction's error: Solana's own variant for it (what a client already
   * knows), with the bound in its text, as a preflight failure's message shows it.
   */
  transactionError(): TransactionError {
    return {
      json: "WouldExceedAccountDataTotalLimit",
      message: `Transaction would exceed total account data limit: ${this.message}`,
    };
  }
}

/** The figures an operator reads (the metric, the docs): bytes of account data held, and the bound. */
export interface AccountBytesFigures {
  readonly used: number;
  readonly max: number;
}

/**
 * The bytes of account data the local chain holds, bounded. LiteSVM keeps accounts outside V8,
 * where the heap limit does not reach and a restart of the chain's worker gives nothing back (the
 * state file brings them again), and the faucet's key is public: without a bound, anyone who can
 * reach the port grows the process by 10 MiB a transaction. Counted are the accounts genesis,
 * transactions and cheatcodes wrote (what the state file holds), not the programs and sysvars a
 * fresh LiteSVM brings; each write counts by how much it changes an account's size, so closing or
 * shrinking an account makes room again.
 */
export interface AccountBytes extends AccountBytesFigures {
  /** Throws AccountBytesExceededError when `growth` bytes more would pass the bound (a shrink always fits). */
  check(growth: number): void;
  /** Counts a change made. */
  add(growth: number): void;
}

export function createAccountBytes(options: {
  /** The accounts the chain starts from, as saved. */
  readonly saved: readonly (readonly [string, SavedAccount])[];
  /** Undefined: no bound (the genesis' own build). */
  readonly max?: number;
}): AccountBytes {
  const max = options.max ?? Number.POSITIVE_INFINITY;
  let used = 0;
  for (const [, account] of options.saved) used += Buffer.byteLength(account.data, "base64");
  return {
    get used() {
      return used;
    },
    max,
    check(growth) {
      if (growth > 0 && used + growth > max) throw new AccountBytesExceededError(max, used, growth);
    },
    add(growth) {
      used += growth;
    },
  };
}

/** Bytes an account holds as the chain counts them: none once it has no lamports (LiteSVM drops it). */
export function accountDataBytes(
  account: { lamports: bigint; data: { length: number } } | undefined,
): number {
  return account === undefined || account.lamports === 0n ? 0 : account.data.length;
}

// Types only: the service's thread holds the mirror, and must not load the chain (LiteSVM, kit).

import type { NewLedgerEntry } from "../runtime/ledger.ts";
import type { ChainState, SavedAccount } from "./chain-state.ts";

/**
 * What changed on a chain since it started from its genesis: each account written since (null:
 * it is gone), the transactions landed since (the newest of them, see createChainMirror), and the
 * clock. Plain data: it crosses from the chain's worker to the service's thread.
 */
export interface ChainDelta {
  readonly accounts: readonly (readonly [address: string, account: SavedAccount | null])[];
  /**
   * Accounts gone that the chain did not start with (a swap's taker account, closed in its own
   * transaction): the mirror forgets them rather than keep a null for each, so that it grows with
   * the accounts alive, not with every account that ever was.
   */
  readonly forgotten?: readonly string[];
  readonly ledger: readonly NewLedgerEntry[];
  readonly clock: ChainState["clock"];
  /** The oldest slot whose blockhash is still valid, as the clock stands. */
  readonly validFrom: number;
}

/**
 * The service's side: what its chain's worker changed since the genesis, kept so that a worker
 * that dies is started again on it (the chain as it was a moment before) instead of on a new
 * genesis. The accounts are all kept; of the transactions, the newest `keepEntries`, and always
 * those of the last 150 slots (their blockhashes are still valid: a chain that forgot one would
 * run it again if it were sent again).
 */
export function createChainMirror(options: { readonly keepEntries: number }): {
  apply(delta: ChainDelta): void;
  /** Everything changed since the genesis, as one delta; undefined: nothing changed. */
  delta(): ChainDelta | undefined;
} {
  const accounts = new Map<string, SavedAccount | null>();
  let ledger: NewLedgerEntry[] = [];
  let clock: ChainState["clock"] | undefined;
  let validFrom = 0;
  return {
    apply(delta) {
      for (const [address, account] of delta.accounts) accounts.set(address, account);
      for (const address of delta.forgotten ?? []) accounts.delete(address);
      ledger.push(...delta.ledger);
      clock = delta.clock;
      validFrom = delta.validFrom;
      const excess = ledger.length - options.keepEntries;
      if (excess > 0) {
        // Dropped from the oldest, but none still within its blockhash's validity.
        const keepFrom = delta.validFrom;
        let drop = 0;
        while (drop < excess && (ledger[drop] as NewLedgerEntry).slot < keepFrom) drop++;
        if (drop > 0) ledger = ledger.slice(drop);
      }
    },
    delta: () =>
      clock === undefined ? undefined : { accounts: [...accounts], ledger: [...ledger], clock, validFrom },
  };
}

/** `state` (the genesis) with `delta` over it: the chain as the delta's last change left it. */
export function withDelta(state: ChainState, delta: ChainDelta): ChainState {
  const accounts = new Map<string, SavedAccount | null>(state.accounts);
  for (const [address, account] of delta.accounts) accounts.set(address, account);
  const last = state.ledger.at(-1)?.slot ?? -1;
  return {
    accounts: [...accounts].filter((a): a is [string, SavedAccount] => a[1] !== null),
    clock: delta.clock,
    // The genesis's history, then what landed since (always later).
    ledger: [...state.ledger, ...delta.ledger.filter((e) => e.slot > last)],
  };
}

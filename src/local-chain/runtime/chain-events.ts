import type { LedgerEntry } from "./ledger.ts";

/** What the local chain tells its listeners as it happens (see ../pubsub/pubsub-subscriptions.ts). */
export type ChainEvent =
  /** A new slot was produced (the newest is `slot`; the chain skips none, so its parent is slot - 1). */
  | { readonly kind: "slot"; readonly slot: number }
  /** A transaction passed its checks and is about to run: "received", as a leader receives it. */
  | { readonly kind: "received"; readonly signature: string }
  /** A transaction landed in `entry.slot` (failed or not); `written` are the accounts it could write. */
  | {
      readonly kind: "transaction";
      readonly entry: LedgerEntry;
      readonly logs: readonly string[];
      readonly written: readonly string[];
    }
  /** An account was set from outside a transaction (a cheatcode), in `slot`. */
  | { readonly kind: "account"; readonly address: string; readonly slot: number };

export interface ChainEvents {
  emit(event: ChainEvent): void;
  /** Adds a listener; returns what removes it. */
  listen(listener: (event: ChainEvent) => void): () => void;
}

/**
 * The local chain's event hook: the chain calls `emit` as it produces slots and lands
 * transactions, so that subscriptions are told at once instead of polling its state. A listener
 * that throws does not stop the chain or the other listeners: `onError` hears of it.
 */
export function createChainEvents(options: { onError?: (error: unknown) => void } = {}): ChainEvents {
  const listeners = new Set<(event: ChainEvent) => void>();
  const onError = options.onError ?? (() => {});
  return {
    emit(event) {
      for (const listener of listeners) {
        try {
          listener(event);
        } catch (error) {
          onError(error);
        }
      }
    },
    listen(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
}

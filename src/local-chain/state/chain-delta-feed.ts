import { BLOCKHASH_VALID_BLOCKS } from "../runtime/block-clock.ts";
import type { ChainEvents } from "../runtime/chain-events.ts";
import type { NewLedgerEntry } from "../runtime/ledger.ts";
import { type LocalChain, savedAccountOf } from "../runtime/local-chain.ts";
import type { ChainDelta } from "./chain-mirror.ts";
import type { SavedAccount } from "./chain-state.ts";

/** How soon after a change the chain's worker tells the service's thread of it. */
export const MIRROR_DELAY_MS = 20;

/**
 * The chain's side of the mirror: every transaction landed and every account set is told to
 * `post` as a ChainDelta, one for each burst (`delayMs` after its first change). It costs what
 * changed, never the whole chain: the accounts written are read once each, the ledger entries are
 * the ones landed. Slots alone post nothing (the clock travels with the next change).
 */
export function createChainDeltaFeed(options: {
  readonly chain: LocalChain;
  readonly events: ChainEvents;
  readonly post: (delta: ChainDelta) => void;
  /** Whether the chain started with an account at `address` (the genesis's, or a restored one). */
  readonly startedWith: (address: string) => boolean;
  readonly delayMs?: number;
}): { close(): void } {
  const { chain, events, post } = options;
  const delayMs = options.delayMs ?? MIRROR_DELAY_MS;
  let written = new Set<string>();
  let landed: NewLedgerEntry[] = [];
  let timer: NodeJS.Timeout | undefined;

  const flush = () => {
    timer = undefined;
    const accounts: [string, SavedAccount | null][] = [];
    const forgotten: string[] = [];
    for (const address of written) {
      const account = chain.account(address);
      if (account !== undefined) accounts.push([address, savedAccountOf(account)]);
      else if (options.startedWith(address)) accounts.push([address, null]);
      else forgotten.push(address);
    }
    const ledger = landed;
    written = new Set();
    landed = [];
    const clock = chain.clock.state();
    post({ accounts, forgotten, ledger, clock, validFrom: clock.slot - BLOCKHASH_VALID_BLOCKS });
  };
  const schedule = () => {
    timer ??= setTimeout(flush, delayMs).unref();
  };
  const stop = events.listen((event) => {
    if (event.kind === "transaction") {
      const { seq: _seq, ...entry } = event.entry;
      landed.push(entry);
      for (const address of event.written) written.add(address);
      schedule();
    } else if (event.kind === "account") {
      written.add(event.address);
      schedule();
    }
  });
  return {
    close() {
      stop();
      if (timer !== undefined) {
        clearTimeout(timer);
        flush();
      }
    },
  };
}

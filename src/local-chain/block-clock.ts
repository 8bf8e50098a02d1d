/**
 * Time on the local chain. Slots follow the wall clock, one every `slotMs` from the chain's
 * genesis, so `blockTime` means wall time and a replica or a wallet sees the chain move while
 * nobody sends anything. Block height equals the slot (the local chain skips none).
 *
 * Blockhashes: each slot that anyone looks at gets a new one, valid for 150 blocks like on a
 * cluster (lastValidBlockHeight = its slot + 150). Slots nobody looked at get none, so an idle chain
 * keeps nothing. LiteSVM itself accepts only its latest blockhash, so the local chain checks
 * validity here and LiteSVM's own check stays off.
 */

/** Blocks a blockhash stays valid for, as on Solana's clusters (MAX_PROCESSING_AGE). */
export const BLOCKHASH_VALID_BLOCKS = 150;
/** Slots between a transaction's confirmation and its finalization (the tower's lockout depth). */
export const FINALIZATION_SLOTS = 32;

export type Commitment = "processed" | "confirmed" | "finalized";

export interface BlockClockState {
  /** Unix milliseconds of slot 0. */
  readonly genesisMs: number;
  readonly slotMs: number;
  /** The newest slot produced. */
  readonly slot: number;
  /** Recent blockhashes, oldest first, with the slot they were made in. */
  readonly blockhashes: readonly (readonly [hash: string, slot: number])[];
}

export interface BlockClock {
  /** The newest slot produced so far. */
  readonly slot: number;
  /** The slot the wall clock is in now (never before the newest produced). */
  dueSlot(): number;
  /** Moves the chain to `slot`, which was given a new blockhash. */
  produce(slot: number, blockhash: string): void;
  /** The slot as seen at `commitment`. */
  slotAt(commitment: Commitment): number;
  /** The newest blockhash as seen at `commitment`, with its slot. */
  latestBlockhash(commitment: Commitment): { blockhash: string; slot: number };
  /** True while a transaction with this blockhash may still land. */
  isValid(blockhash: string): boolean;
  /** Unix seconds of a slot, as blockTime shows it. */
  timeOf(slot: number): number;
  /** Unix milliseconds of a slot. */
  msOf(slot: number): number;
  state(): BlockClockState;
}

export function createBlockClock(options: { state: BlockClockState; now: () => number }): BlockClock {
  const { genesisMs, slotMs } = options.state;
  const { now } = options;
  let slot = options.state.slot;
  const hashes = new Map<string, number>(options.state.blockhashes);
  const order: [string, number][] = options.state.blockhashes.map(([h, s]) => [h, s]);

  const prune = () => {
    // Keep what is still valid, plus what a finalized view may still name.
    const oldest = slot - BLOCKHASH_VALID_BLOCKS - FINALIZATION_SLOTS;
    while (order.length > 1 && (order[0] as [string, number])[1] < oldest) {
      hashes.delete((order.shift() as [string, number])[0]);
    }
  };

  return {
    get slot() {
      return slot;
    },
    dueSlot: () => Math.max(slot, Math.floor((now() - genesisMs) / slotMs)),
    produce(next, blockhash) {
      if (next < slot) throw new Error(`slot ${next} is before slot ${slot}`);
      slot = next;
      hashes.set(blockhash, next);
      order.push([blockhash, next]);
      prune();
    },
    slotAt: (commitment) => (commitment === "finalized" ? Math.max(0, slot - FINALIZATION_SLOTS) : slot),
    latestBlockhash(commitment) {
      const limit = commitment === "finalized" ? slot - FINALIZATION_SLOTS : slot;
      for (let i = order.length - 1; i >= 0; i--) {
        const [blockhash, at] = order[i] as [string, number];
        if (at <= limit || i === 0) return { blockhash, slot: at };
      }
      throw new Error("the chain has no blockhash");
    },
    isValid(blockhash) {
      const at = hashes.get(blockhash);
      return at !== undefined && slot <= at + BLOCKHASH_VALID_BLOCKS;
    },
    timeOf: (at) => Math.floor((genesisMs + at * slotMs) / 1000),
    msOf: (at) => genesisMs + at * slotMs,
    state: () => ({ genesisMs, slotMs, slot, blockhashes: order.map(([h, s]) => [h, s] as const) }),
  };
}

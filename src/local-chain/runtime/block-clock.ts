import { createHash } from "node:crypto";
import { getBase58Decoder } from "@solana/kit";

/**
 * Time on the local chain. Slots follow the wall clock, one every `slotMs` from the chain's
 * genesis, so `blockTime` means wall time and a replica or a wallet sees the chain move while
 * nobody sends anything. Block height equals the slot (the local chain skips none).
 *
 * As on Agave, only the working slot (the newest, `processed`) takes transactions; the slots
 * before it are frozen blocks: `confirmed` names the one before the working slot, `finalized` the
 * one 32 slots back. A block's blockhash is made when it freezes, and the working slot's bank
 * answers its parent's, so a transaction sent with the newest confirmed blockhash lands in a
 * later slot than that blockhash's, and a new confirmed blockhash follows its confirmation. Every
 * frozen slot has a blockhash of its own, the same that getBlock shows: the parent of the working
 * slot gets the runtime's (LiteSVM's, which durable nonces take), the slots of an idle gap before
 * it a stand-in derived from the genesis and the slot. Hashes are kept while a transaction may
 * still use them (150 blocks, as MAX_PROCESSING_AGE) or a finalized view may name them. LiteSVM
 * itself accepts only its latest blockhash, so the local chain checks validity here and LiteSVM's
 * own check stays off.
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
  /** The working slot: the newest, the one transactions land in. */
  readonly slot: number;
  /** Recent blocks' blockhashes, oldest first, with their slot. */
  readonly blockhashes: readonly (readonly [hash: string, slot: number])[];
}

export interface BlockClock {
  /** The working slot: the newest, the only one that takes transactions. */
  readonly slot: number;
  /** The slot the wall clock is in now (never before the working slot). */
  dueSlot(): number;
  /**
   * Freezes the working slot and every slot up to `next` (exclusive), which becomes the working
   * slot: `parentHash` is the blockhash of the slot just before `next`.
   */
  advance(next: number, parentHash: string): void;
  /** The slot as seen at `commitment`: the working slot, the one before it, or 32 before that. */
  slotAt(commitment: Commitment): number;
  /**
   * The newest blockhash as seen at `commitment` (a frozen slot's), with the slot of the bank
   * answering (the commitment's slot), as getLatestBlockhash gives them.
   */
  latestBlockhash(commitment: Commitment): { blockhash: string; slot: number };
  /** A frozen slot's blockhash: the one the chain gave it while kept, else its stand-in. */
  blockhashOf(slot: number): string;
  /** Kept blockhashes, newest first (the faucet's choice when one is taken). */
  recentBlockhashes(): readonly string[];
  /** True while a transaction with this blockhash may still land in the working slot. */
  isValid(blockhash: string): boolean;
  /** Unix seconds of a slot, as blockTime shows it. */
  timeOf(slot: number): number;
  /** Unix milliseconds of a slot. */
  msOf(slot: number): number;
  state(): BlockClockState;
}

/** Slots whose blockhash is kept behind the working slot: valid ones, and what finalized names. */
const KEPT_SLOTS = BLOCKHASH_VALID_BLOCKS + FINALIZATION_SLOTS + 2;

/** The blockhash of a slot the chain gave none of its own (an idle gap's, or one long forgotten). */
export function standInBlockhash(genesisMs: number, slot: number): string {
  return getBase58Decoder().decode(
    createHash("sha256").update(`local chain block ${genesisMs} ${slot}`).digest(),
  );
}

export function createBlockClock(options: { state: BlockClockState; now: () => number }): BlockClock {
  const { genesisMs, slotMs } = options.state;
  const { now } = options;
  let slot = options.state.slot;
  const hashes = new Map<string, number>(options.state.blockhashes);
  const bySlot = new Map<number, string>(options.state.blockhashes.map(([h, s]) => [s, h]));
  const order: [string, number][] = options.state.blockhashes.map(([h, s]) => [h, s]);

  const keep = (hash: string, at: number) => {
    hashes.set(hash, at);
    bySlot.set(at, hash);
    order.push([hash, at]);
  };
  const prune = () => {
    const oldest = slot - KEPT_SLOTS;
    while (order.length > 1 && (order[0] as [string, number])[1] < oldest) {
      const [hash, at] = order.shift() as [string, number];
      hashes.delete(hash);
      if (bySlot.get(at) === hash) bySlot.delete(at);
    }
  };
  const blockhashOf = (at: number) => bySlot.get(at) ?? standInBlockhash(genesisMs, at);
  const slotAt = (commitment: Commitment) =>
    commitment === "processed"
      ? slot
      : Math.max(0, slot - 1 - (commitment === "confirmed" ? 0 : FINALIZATION_SLOTS));

  return {
    get slot() {
      return slot;
    },
    dueSlot: () => Math.max(slot, Math.floor((now() - genesisMs) / slotMs)),
    advance(next, parentHash) {
      if (next <= slot) throw new Error(`slot ${next} is not after the working slot ${slot}`);
      // The slots of an idle gap are empty blocks, each with a blockhash of its own; only those
      // still kept get one now (older ones are their stand-ins anyway).
      for (let at = Math.max(slot, next - 1 - KEPT_SLOTS); at < next - 1; at++) {
        if (!bySlot.has(at)) keep(standInBlockhash(genesisMs, at), at);
      }
      keep(parentHash, next - 1);
      slot = next;
      prune();
    },
    slotAt,
    latestBlockhash(commitment) {
      const bank = slotAt(commitment);
      // The working bank answers its parent's blockhash; a frozen bank, its own.
      const frozen = commitment === "processed" ? Math.max(0, bank - 1) : bank;
      return { blockhash: blockhashOf(frozen), slot: bank };
    },
    blockhashOf,
    recentBlockhashes: () => order.map(([h]) => h).reverse(),
    isValid(blockhash) {
      const at = hashes.get(blockhash);
      // Its age in the working bank's queue: the blocks frozen after it.
      return at !== undefined && slot - 1 - at <= BLOCKHASH_VALID_BLOCKS;
    },
    timeOf: (at) => Math.floor((genesisMs + at * slotMs) / 1000),
    msOf: (at) => genesisMs + at * slotMs,
    state: () => ({ genesisMs, slotMs, slot, blockhashes: order.map(([h, s]) => [h, s] as const) }),
  };
}

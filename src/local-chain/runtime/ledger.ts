/**
 * The local chain's transaction history: what LiteSVM does not keep. LiteSVM executes
 * transactions but indexes nothing by address and records no balances, so the local chain records
 * each landed transaction here as it executes it: its signature, slot and error, and its
 * JSON-RPC renderings (the transaction and its meta as JSON text, ready to be spliced into
 * answers), and indexes it under every account it names, as a validator's ledger does for
 * getSignaturesForAddress.
 *
 * The history is a window, as a validator's RPC keeps one: past `maxEntries` transactions the
 * oldest go, with their index entries, so memory stays bounded however many transactions land
 * (about 2 KB each). What went is answered as a validator answers for history it no longer has:
 * getTransaction null, no status, absent from getSignaturesForAddress.
 */

export interface LedgerEntry {
  /** Order of landing across the whole chain. */
  readonly seq: number;
  readonly signature: string;
  /** The slot it landed in; its time is the slot's (see block-clock.ts), so a chain can be rebased. */
  readonly slot: number;
  /** The transaction error in JSON-RPC's form, or null when it succeeded. */
  readonly err: unknown;
  /** The text of its Memo instructions, as getSignaturesForAddress shows it, or null. */
  readonly memo: string | null;
  readonly version: "legacy" | 0;
  /** The transaction as sent, base64. */
  readonly wire: string;
  /** The transaction in JSON-RPC's "json" encoding, as JSON text. */
  readonly transactionJson: string;
  /** The transaction's meta, as JSON text. */
  readonly metaJson: string;
  /** Every account the transaction names (static keys, then loaded ones). */
  readonly accounts: readonly string[];
}

export type NewLedgerEntry = Omit<LedgerEntry, "seq">;

export interface SignatureRange {
  readonly before?: string;
  readonly until?: string;
  readonly limit: number;
  /** Only entries at or below this slot (a commitment's view). */
  readonly maxSlot: number;
}

/** What the ledger holds, counted: each is bounded by the window. */
export interface LedgerStats {
  readonly entries: number;
  /** Signatures indexed (one per entry). */
  readonly signatures: number;
  /** Addresses with at least one kept entry. */
  readonly addresses: number;
  /** Index entries over all addresses (one per account a kept transaction names). */
  readonly indexed: number;
}

export interface Ledger {
  append(entry: NewLedgerEntry): LedgerEntry;
  get(signature: string): LedgerEntry | undefined;
  /** Entries naming `address`, newest first, within the range. */
  signaturesFor(address: string, range: SignatureRange): LedgerEntry[];
  /**
   * Drops the oldest entries past the window, but none landed at or after `keepFromSlot`: a
   * transaction whose blockhash is still valid must stay known, or it could be sent again and run
   * twice. Returns how many went.
   */
  prune(keepFromSlot: number): number;
  readonly size: number;
  /** The slot of the oldest entry kept (undefined: none). */
  readonly firstSlot: number | undefined;
  /** The entries that landed in `slot`, in the order they ran (a block's transactions). */
  inSlot(slot: number): LedgerEntry[];
  /** How many kept entries landed in slots `from` to `to`, both included (performance samples). */
  countInSlots(from: number, to: number): number;
  /** Every entry kept, oldest first, for saving: a copy, so saving can go on while others land. */
  entries(): readonly LedgerEntry[];
  stats(): LedgerStats;
  /**
   * Transactions landed at or below `maxSlot` (getEpochInfo's transactionCount), counting those
   * the window forgot but not those before the chain's state was loaded (saved entries count once).
   */
  transactionCount(maxSlot: number): number;
}

/** Index lists are compacted once this many of their first items are dropped (and half of them). */
const COMPACT_AFTER = 1024;

/** An address's entries (their seqs, ascending), the first `head` of them dropped. */
interface SeqList {
  seqs: number[];
  head: number;
}

export function createLedger(
  options: {
    /** Entries to start from (a saved state's), oldest first. */
    readonly saved?: readonly NewLedgerEntry[];
    /** Entries kept at most, besides those of the last slots (see `prune`); default: all. */
    readonly maxEntries?: number;
  } = {},
): Ledger {
  const maxEntries = options.maxEntries ?? Number.POSITIVE_INFINITY;
  /** Kept entries, oldest first, from index `head`; entries[i] has seq `base + i`. */
  let entries: LedgerEntry[] = [];
  let head = 0;
  let base = 0;
  let nextSeq = 0;
  let indexed = 0;
  const bySignature = new Map<string, LedgerEntry>();
  const byAddress = new Map<string, SeqList>();

  const entryAt = (seq: number) => entries[seq - base] as LedgerEntry;
  const size = () => entries.length - head;

  const append = (entry: NewLedgerEntry): LedgerEntry => {
    const stored: LedgerEntry = Object.freeze({ ...entry, seq: nextSeq++ });
    entries.push(stored);
    bySignature.set(stored.signature, stored);
    for (const account of new Set(stored.accounts)) {
      const list = byAddress.get(account);
      if (list === undefined) byAddress.set(account, { seqs: [stored.seq], head: 0 });
      else list.seqs.push(stored.seq);
      indexed++;
    }
    return stored;
  };

  /** Drops the oldest entry: it is the first of every list that names it. */
  const dropOldest = () => {
    const oldest = entries[head] as LedgerEntry;
    entries[head] = undefined as unknown as LedgerEntry;
    head++;
    if (bySignature.get(oldest.signature) === oldest) bySignature.delete(oldest.signature);
    for (const account of new Set(oldest.accounts)) {
      const list = byAddress.get(account);
      if (list === undefined) continue;
      list.head++;
      indexed--;
      if (list.head >= list.seqs.length) byAddress.delete(account);
      else if (list.head >= COMPACT_AFTER && list.head * 2 >= list.seqs.length) {
        list.seqs = list.seqs.slice(list.head);
        list.head = 0;
      }
    }
    if (head >= COMPACT_AFTER && head * 2 >= entries.length) {
      entries = entries.slice(head);
      base += head;
      head = 0;
    }
  };

  const prune = (keepFromSlot: number): number => {
    let dropped = 0;
    while (size() > maxEntries && (entries[head] as LedgerEntry).slot < keepFromSlot) {
      dropOldest();
      dropped++;
    }
    return dropped;
  };

  /** The index of the first kept entry landed at or after `slot`: entries land in slot order. */
  const firstAtOrAfter = (slot: number): number => {
    let low = head;
    let high = entries.length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if ((entries[mid] as LedgerEntry).slot < slot) low = mid + 1;
      else high = mid;
    }
    return low;
  };

  for (const entry of options.saved ?? []) append(entry);

  return {
    append,
    prune,
    get: (signature) => bySignature.get(signature),
    get size() {
      return size();
    },
    get firstSlot() {
      return size() === 0 ? undefined : (entries[head] as LedgerEntry).slot;
    },
    entries: () => entries.slice(head),
    inSlot(slot) {
      const found: LedgerEntry[] = [];
      for (
        let i = firstAtOrAfter(slot);
        i < entries.length && (entries[i] as LedgerEntry).slot === slot;
        i++
      ) {
        found.push(entries[i] as LedgerEntry);
      }
      return found;
    },
    countInSlots: (from, to) => (to < from ? 0 : firstAtOrAfter(to + 1) - firstAtOrAfter(from)),
    stats: () => ({ entries: size(), signatures: bySignature.size, addresses: byAddress.size, indexed }),
    transactionCount(maxSlot) {
      // Entries land in slot order, so only the newest few can be past a commitment's slot.
      let count = nextSeq;
      for (let i = entries.length - 1; i >= head && (entries[i] as LedgerEntry).slot > maxSlot; i--) count--;
      return count;
    },
    signaturesFor(address, range) {
      const list = byAddress.get(address);
      if (list === undefined) return [];
      const { seqs } = list;
      // Start below `before` (wherever it sits in the chain), stop at `until`. A `before` no
      // longer kept (or never seen) finds nothing, as on a validator.
      let end = seqs.length;
      if (range.before !== undefined) {
        const before = bySignature.get(range.before);
        if (before === undefined) return [];
        end = lowerBound(seqs, list.head, before.seq);
      }
      const until = range.until === undefined ? undefined : bySignature.get(range.until)?.seq;
      const found: LedgerEntry[] = [];
      for (let i = end - 1; i >= list.head && found.length < range.limit; i--) {
        const seq = seqs[i] as number;
        if (until !== undefined && seq <= until) break;
        const entry = entryAt(seq);
        if (entry.slot <= range.maxSlot) found.push(entry);
      }
      return found;
    },
  };
}

/** The first index from `low` whose value is not below `value` (the list is ascending). */
function lowerBound(list: readonly number[], from: number, value: number): number {
  let low = from;
  let high = list.length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if ((list[mid] as number) < value) low = mid + 1;
    else high = mid;
  }
  return low;
}

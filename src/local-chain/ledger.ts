/**
 * The local chain's transaction history: what LiteSVM does not keep. LiteSVM executes
 * transactions but indexes nothing by address and records no balances, so the local chain records
 * each landed transaction here as it executes it: its signature, slot and error, and its
 * JSON-RPC renderings (the transaction and its meta as JSON text, ready to be spliced into
 * answers), and indexes it under every account it names, as a validator's ledger does for
 * getSignaturesForAddress.
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

export interface Ledger {
  append(entry: NewLedgerEntry): LedgerEntry;
  get(signature: string): LedgerEntry | undefined;
  /** Entries naming `address`, newest first, within the range. */
  signaturesFor(address: string, range: SignatureRange): LedgerEntry[];
  readonly size: number;
  /** Every entry, oldest first, for saving. */
  entries(): readonly LedgerEntry[];
}

export function createLedger(saved: readonly NewLedgerEntry[] = []): Ledger {
  const entries: LedgerEntry[] = [];
  const bySignature = new Map<string, LedgerEntry>();
  /** Per address, the seq of every entry naming it, ascending. */
  const byAddress = new Map<string, number[]>();

  const append = (entry: NewLedgerEntry): LedgerEntry => {
    const stored: LedgerEntry = Object.freeze({ ...entry, seq: entries.length });
    entries.push(stored);
    bySignature.set(stored.signature, stored);
    for (const account of new Set(stored.accounts)) {
      const list = byAddress.get(account);
      if (list === undefined) byAddress.set(account, [stored.seq]);
      else list.push(stored.seq);
    }
    return stored;
  };
  for (const entry of saved) append(entry);

  return {
    append,
    get: (signature) => bySignature.get(signature),
    get size() {
      return entries.length;
    },
    entries: () => entries,
    signaturesFor(address, range) {
      const list = byAddress.get(address);
      if (list === undefined) return [];
      // Start below `before` (wherever it sits in the chain), stop at `until`.
      let end = list.length;
      if (range.before !== undefined) {
        const before = bySignature.get(range.before);
        if (before === undefined) return [];
        end = lowerBound(list, before.seq);
      }
      const until = range.until === undefined ? undefined : bySignature.get(range.until)?.seq;
      const found: LedgerEntry[] = [];
      for (let i = end - 1; i >= 0 && found.length < range.limit; i--) {
        const seq = list[i] as number;
        if (until !== undefined && seq <= until) break;
        const entry = entries[seq] as LedgerEntry;
        if (entry.slot <= range.maxSlot) found.push(entry);
      }
      return found;
    },
  };
}

/** The first index whose value is not below `value` (the list is ascending). */
function lowerBound(list: readonly number[], value: number): number {
  let low = 0;
  let high = list.length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if ((list[mid] as number) < value) low = mid + 1;
    else high = mid;
  }
  return low;
}

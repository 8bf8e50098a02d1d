import {
  type Address,
  type CompiledTransactionMessage,
  compileTransactionMessage,
  type Instruction,
  type TransactionMessage,
  type TransactionMessageWithFeePayer,
} from "@solana/kit";
import { compareAddresses, isAddressText } from "./address-order.ts";

/**
 * Kit's compileTransactionMessage for legacy and v0 messages, to the letter of its result: the
 * same accounts in the same order, header, instruction indices, address table lookups and
 * lifetime token. Kit's compile (@solana/transaction-messages 8.4, src/compile/{legacy,v0}) was a
 * tenth of the swap path's allocation and ~0.25 ms a swap in its profile: a spread copy of every
 * account meta and of every entry it updates, an object keyed by address sorted through its
 * entries, a new Intl collator per message. Here each address has one record, updated in place,
 * and the order is compared on char codes (address-order.ts).
 *
 * What this does not compile (another version, a text that is not a key's, a role that is not
 * one of the four, a lookup meta that signs or sits in a legacy message, any conflict kit throws
 * for, a count over kit's limits) goes to kit's compile, so its result or its error is the answer.
 * test/compiled-message.test.ts holds the two to deep equality, errors included.
 */
export function compiledMessage(
  message: TransactionMessage & TransactionMessageWithFeePayer,
): CompiledTransactionMessage & { readonly lifetimeToken?: string } {
  let compiled: CompiledTransactionMessage | undefined;
  try {
    compiled = compile(message);
  } catch {
    // Only a message not of kit's shape (a null instruction, a lifetime that is not an object)
    // trips this reading; kit's compile decides what becomes of it, error or not.
    compiled = undefined;
  }
  return compiled ?? compileTransactionMessage(message);
}

/** Kit's kinds of entry (its TYPE): the fee payer sorts first, then static accounts, then looked-up ones. */
const FEE_PAYER = 0;
const STATIC = 1;
const LOOKUP = 2;
/** Kit's AccountRole bits: 2 signs, 1 writes. */
const SIGNER = 2;
const WRITABLE = 1;
/** Kit's AccountRole.WRITABLE_SIGNER, the fee payer's role. */
const WRITABLE_SIGNER = SIGNER | WRITABLE;

/** Kit's addressMap entry for one address, with its place in the order once sorted. */
interface Entry {
  readonly address: string;
  kind: number;
  role: number;
  /** Whether an instruction so far invokes it (kit's addressesOfInvokedPrograms). */
  invoked: boolean;
  table: string | undefined;
  addressIndex: unknown;
  /** kind, then signers, then writable ones: the first three keys of kit's sort, in one number. */
  rank: number;
  position: number;
}

/** A looked-up table's indexes, as kit's getCompiledAddressTableLookups gathers them. */
interface Lookup {
  readonly lookupTableAddress: Address;
  readonly readonlyIndexes: number[];
  readonly writableIndexes: number[];
}

/** Kit's compile of a legacy or v0 message, or undefined where kit's own is to answer. */
function compile(message: TransactionMessage & TransactionMessageWithFeePayer) {
  const version = message.version;
  if (version !== "legacy" && version !== 0) return undefined;
  // Legacy messages' instructions are typed without lookup metas; kit reads both alike.
  const instructions: readonly Instruction[] = message.instructions;
  // Kit's limit of 64 instructions; it throws past it.
  if (!Array.isArray(instructions) || instructions.length > 64) return undefined;
  const feePayer = message.feePayer.address;
  if (!isAddressText(feePayer)) return undefined;
  const entries = new Map<string, Entry>();
  entries.set(feePayer, entry(feePayer, FEE_PAYER, WRITABLE_SIGNER));
  // The entry of each program and account meta in the order of the message, for the indices.
  const met: Entry[] = [];
  // The last table text found to be a key's: a message's lookup metas mostly name one table.
  let checkedTable: string | undefined;

  // Kit's getAddressMapFromInstructions (legacy) and getAddressMapFromInstructions2 (v0): each
  // instruction's program, then its accounts, merged into the address's entry.
  for (const instruction of instructions) {
    const program = instruction.programAddress;
    const known = entries.get(program);
    if (known === undefined) {
      if (!isAddressText(program)) return undefined;
      const added = entry(program, STATIC, 0);
      added.invoked = true;
      entries.set(program, added);
      met.push(added);
    } else {
      met.push(known);
      // A program may not be written (nor pay the fee, which is written): kit throws.
      if ((known.role & WRITABLE) !== 0) return undefined;
      known.invoked = true;
      // A read-only looked-up account that is also a program becomes a static read-only one.
      if (known.kind === LOOKUP) {
        known.kind = STATIC;
        known.role = 0;
        known.table = undefined;
        known.addressIndex = undefined;
      }
    }
    const accounts = instruction.accounts;
    if (!accounts) continue;
    // Kit's limit of 255 accounts an instruction; it throws past it.
    if (!Array.isArray(accounts) || accounts.length > 255) return undefined;
    for (const account of accounts) {
      const address = account.address;
      const role = account.role as number;
      if (typeof role !== "number" || (role & 3) !== role) return undefined;
      // Kit asks the meta it spread (own enumerable keys only) whether it is looked up.
      const looked = "lookupTableAddress" in account;
      let table: string | undefined;
      let addressIndex: unknown;
      if (looked) {
        if (version === "legacy" || (role & SIGNER) !== 0) return undefined;
        if (!Object.prototype.propertyIsEnumerable.call(account, "lookupTableAddress")) return undefined;
        table = account.lookupTableAddress as unknown as string;
        if (checkedTable === undefined || table !== checkedTable) {
          if (!isAddressText(table)) return undefined;
          checkedTable = table;
        }
        addressIndex = account.addressIndex;
      }
      const known = entries.get(address);
      if (known === undefined) {
        if (!isAddressText(address)) return undefined;
        const added = entry(address, looked ? LOOKUP : STATIC, role);
        added.table = table;
        added.addressIndex = addressIndex;
        entries.set(address, added);
        met.push(added);
        continue;
      }
      met.push(known);
      if (known.kind === FEE_PAYER) continue;
      const merged = known.role | role;
      if (known.kind === LOOKUP) {
        if (looked) {
          // Of two tables holding it, the one first in the order of addresses.
          if (known.table !== table && compareAddresses(table as string, known.table as string) < 0) {
            known.table = table;
            known.addressIndex = addressIndex;
          }
        } else if ((role & SIGNER) !== 0) {
          // A signer is static: its key is in the message.
          known.kind = STATIC;
          known.table = undefined;
          known.addressIndex = undefined;
        }
        known.role = merged;
      } else if (known.invoked) {
        if ((role & WRITABLE) !== 0) return undefined;
        known.role = merged;
      } else if (looked && (known.role & SIGNER) === 0) {
        // A static account that does not sign may be looked up instead.
        known.kind = LOOKUP;
        known.table = table;
        known.addressIndex = addressIndex;
        known.role = merged;
      } else {
        known.role = merged;
      }
    }
  }

  // Kit's limits of 64 accounts and 12 signers; it throws past them.
  if (entries.size > 64) return undefined;
  const ordered: Entry[] = [];
  let signers = 0;
  for (const account of entries.values()) {
    const signs = (account.role & SIGNER) !== 0;
    if (signs) signers++;
    account.rank = account.kind * 4 + (signs ? 0 : 2) + ((account.role & WRITABLE) !== 0 ? 0 : 1);
    ordered.push(account);
  }
  if (signers > 12) return undefined;
  ordered.sort(inKitOrder);

  // Kit's getCompiledMessageHeader and getCompiledStaticAccounts: the accounts before the first
  // looked-up one.
  const staticAccounts: Address[] = [];
  let numReadonlySignerAccounts = 0;
  let numReadonlyNonSignerAccounts = 0;
  for (let i = 0; i < ordered.length; i++) {
    const account = ordered[i] as Entry;
    account.position = i;
    if (account.kind === LOOKUP) continue;
    staticAccounts.push(account.address as Address);
    if ((account.role & WRITABLE) === 0) {
      if ((account.role & SIGNER) !== 0) numReadonlySignerAccounts++;
      else numReadonlyNonSignerAccounts++;
    }
  }
  const header = { numReadonlyNonSignerAccounts, numReadonlySignerAccounts, numSignerAccounts: signers };
  // Kit's getCompiledInstructions: each program's and account's place in the order.
  let at = 0;
  const compiledInstructions = instructions.map(({ accounts, data }) => {
    const programAddressIndex = (met[at++] as Entry).position;
    if (!accounts) return data ? { programAddressIndex, data } : { programAddressIndex };
    const accountIndices: number[] = [];
    for (let i = 0; i < accounts.length; i++) accountIndices.push((met[at++] as Entry).position);
    return data ? { programAddressIndex, accountIndices, data } : { programAddressIndex, accountIndices };
  });
  const lifetime = (message as { lifetimeConstraint?: { nonce?: string; blockhash?: string } })
    .lifetimeConstraint;
  const lifetimeToken = lifetime ? ("nonce" in lifetime ? lifetime.nonce : lifetime.blockhash) : undefined;
  const rest = { header, instructions: compiledInstructions, staticAccounts, version };
  if (version === "legacy")
    return (lifetime ? { lifetimeToken, ...rest } : rest) as CompiledTransactionMessage;
  const addressTableLookups = lookups(ordered, staticAccounts.length);
  return (
    lifetime ? { addressTableLookups, lifetimeToken, ...rest } : { addressTableLookups, ...rest }
  ) as CompiledTransactionMessage;
}

function entry(address: string, kind: number, role: number): Entry {
  return {
    address,
    kind,
    role,
    invoked: false,
    table: undefined,
    addressIndex: undefined,
    rank: 0,
    position: 0,
  };
}

/**
 * Kit's sort of its address map: kind, signers first, writable first, then looked-up accounts
 * by table and, in the same table or static, by address. A total order on distinct addresses, so
 * it gives kit's sequence whatever the order the entries came in.
 */
function inKitOrder(a: Entry, b: Entry): number {
  if (a.rank !== b.rank) return a.rank - b.rank;
  if (a.kind === LOOKUP && a.table !== b.table) return compareAddresses(a.table as string, b.table as string);
  return compareAddresses(a.address, b.address);
}

/** Kit's getCompiledAddressTableLookups: each table's indexes in account order, the tables by address. */
function lookups(ordered: readonly Entry[], from: number): Lookup[] {
  const tables: Lookup[] = [];
  for (let i = from; i < ordered.length; i++) {
    const account = ordered[i] as Entry;
    let lookup: Lookup | undefined;
    for (const table of tables) if (table.lookupTableAddress === account.table) lookup = table;
    if (lookup === undefined) {
      lookup = { lookupTableAddress: account.table as Address, readonlyIndexes: [], writableIndexes: [] };
      tables.push(lookup);
    }
    (account.role === WRITABLE ? lookup.writableIndexes : lookup.readonlyIndexes).push(
      account.addressIndex as number,
    );
  }
  return tables.length > 1
    ? tables.sort((a, b) => compareAddresses(a.lookupTableAddress, b.lookupTableAddress))
    : tables;
}

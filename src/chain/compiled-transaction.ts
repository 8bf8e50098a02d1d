import {
  type CompiledTransactionMessage,
  type compileTransaction,
  compileTransactionMessage,
  getCompiledTransactionMessageEncoder,
  type TransactionMessage,
  type TransactionMessageWithFeePayer,
} from "@solana/kit";
import { base58AddressBytes } from "./base58-address.ts";

/**
 * Kit's compileTransaction: kit's compile, and the wire form written here. Kit's message encoder
 * reads every static account, the lookup tables and the blockhash through its BigInt base58 codec:
 * 219 µs of CPU a transfer's message and 471 µs a swap's, where this writes them in 7 and 14 µs
 * (`npm run bench:library -- encoder`; docs/performance.md, "Our code where a library exists").
 * The compile itself is kit's: a hand-written one saved 30 µs a run, about 1 % of one. This writes
 * the layout of kit's codec (test/compiled-transaction.test.ts holds the two to the same bytes);
 * anything it does not write (a version past 0, a key that is not 32 bytes of base58) goes to
 * kit's encoder, so its refusals stay kit's.
 */
export function compiledTransaction<T extends TransactionMessage & TransactionMessageWithFeePayer>(
  message: T,
): ReturnType<typeof compileTransaction<T>> {
  const compiled = compileTransactionMessage(message);
  const messageBytes = compiledMessageBytes(compiled);
  const signatures: Record<string, null> = {};
  for (const signer of compiled.staticAccounts.slice(0, compiled.header.numSignerAccounts)) {
    signatures[signer] = null;
  }
  const lifetime = (message as { lifetimeConstraint?: Record<string, unknown> }).lifetimeConstraint;
  const first = message.instructions[0]?.accounts?.[0];
  const lifetimeConstraint =
    lifetime === undefined
      ? undefined
      : "blockhash" in lifetime
        ? { blockhash: lifetime.blockhash, lastValidBlockHeight: lifetime.lastValidBlockHeight }
        : "nonce" in lifetime
          ? { nonce: lifetime.nonce, nonceAccountAddress: first?.address }
          : undefined;
  return Object.freeze({
    ...(lifetimeConstraint === undefined ? {} : { lifetimeConstraint }),
    messageBytes,
    signatures: Object.freeze(signatures),
  }) as unknown as ReturnType<typeof compileTransaction<T>>;
}

/** A compiled legacy or v0 message on the wire, as kit's getCompiledTransactionMessageEncoder writes it. */
export function compiledMessageBytes(compiled: CompiledTransactionMessage): Uint8Array {
  if (compiled.version !== "legacy" && compiled.version !== 0) return kitBytes(compiled);
  const keys: Uint8Array[] = [];
  for (const account of compiled.staticAccounts) {
    const bytes = base58AddressBytes(account);
    if (bytes === undefined) return kitBytes(compiled);
    keys.push(bytes);
  }
  const token = (compiled as { lifetimeToken?: string }).lifetimeToken;
  const lifetime = token === undefined ? new Uint8Array(32) : base58AddressBytes(token);
  if (lifetime === undefined) return kitBytes(compiled);
  const lookups = compiled.version === 0 ? (compiled.addressTableLookups ?? []) : [];
  // Indices are single bytes on the wire: kit's encoder refuses a larger one, and so it shall.
  const bytesOnly = (values: readonly number[]) =>
    values.every((v) => Number.isInteger(v) && v >= 0 && v <= 255);
  const { header } = compiled;
  if (
    !bytesOnly([
      header.numSignerAccounts,
      header.numReadonlySignerAccounts,
      header.numReadonlyNonSignerAccounts,
    ]) ||
    !compiled.instructions.every(
      (ix) => bytesOnly([ix.programAddressIndex]) && bytesOnly(ix.accountIndices ?? []),
    ) ||
    !lookups.every((l) => bytesOnly(l.writableIndexes) && bytesOnly(l.readonlyIndexes))
  ) {
    return kitBytes(compiled);
  }
  const tables: Uint8Array[] = [];
  for (const lookup of lookups) {
    const bytes = base58AddressBytes(lookup.lookupTableAddress);
    if (bytes === undefined) return kitBytes(compiled);
    tables.push(bytes);
  }

  const out: number[] = [];
  const push = (bytes: ArrayLike<number>) => {
    for (let i = 0; i < bytes.length; i++) out.push(bytes[i] as number);
  };
  // A v0 message starts with its version, high bit set; a legacy one with its header.
  if (compiled.version === 0) out.push(0x80);
  out.push(header.numSignerAccounts, header.numReadonlySignerAccounts, header.numReadonlyNonSignerAccounts);
  shortU16(out, keys.length);
  for (const key of keys) push(key);
  push(lifetime);
  shortU16(out, compiled.instructions.length);
  for (const instruction of compiled.instructions) {
    out.push(instruction.programAddressIndex);
    const indices = instruction.accountIndices ?? [];
    shortU16(out, indices.length);
    push(indices);
    const data = instruction.data ?? new Uint8Array(0);
    shortU16(out, data.length);
    push(data);
  }
  if (compiled.version === 0) {
    shortU16(out, lookups.length);
    for (const [i, lookup] of lookups.entries()) {
      push(tables[i] as Uint8Array);
      shortU16(out, lookup.writableIndexes.length);
      push(lookup.writableIndexes);
      shortU16(out, lookup.readonlyIndexes.length);
      push(lookup.readonlyIndexes);
    }
  }
  return Uint8Array.from(out);
}

/** Solana's compact-u16: seven bits a byte, low first, the high bit set while more follow. */
function shortU16(out: number[], value: number): void {
  if (!Number.isInteger(value) || value < 0 || value > 0xffff) {
    throw new RangeError(`a compact-u16 holds 0 to 65535, not ${value}`);
  }
  let rest = value;
  for (;;) {
    const low = rest & 0x7f;
    rest >>= 7;
    if (rest === 0) {
      out.push(low);
      return;
    }
    out.push(low | 0x80);
  }
}

function kitBytes(compiled: CompiledTransactionMessage): Uint8Array {
  return getCompiledTransactionMessageEncoder().encode(compiled) as Uint8Array;
}

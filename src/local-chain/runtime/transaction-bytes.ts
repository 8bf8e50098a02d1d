import type {
  Address,
  CompiledTransactionMessageWithLifetime,
  LegacyCompiledTransactionMessage,
  SignatureBytes,
  Transaction,
  TransactionMessageBytes,
  V0CompiledTransactionMessage,
} from "@solana/kit";
import { base58Address } from "../../chain/base58-address.ts";

/** What kit's getTransactionDecoder and getCompiledTransactionMessageDecoder give for a legacy or v0 transaction. */
export interface DecodedTransactionBytes {
  readonly transaction: Transaction;
  readonly message: (LegacyCompiledTransactionMessage | V0CompiledTransactionMessage) &
    CompiledTransactionMessageWithLifetime;
}

type Instruction = V0CompiledTransactionMessage["instructions"][number];
type Lookup = NonNullable<V0CompiledTransactionMessage["addressTableLookups"]>[number];

/**
 * A hand-written decoder of the wire format, for the transactions the embedded chain is sent most:
 * signatures first, a legacy or v0 message, every length where it should be and nothing after the
 * message. Kit's codecs read each key and blockhash through BigInt base58 and build a decoder
 * object per field; the swap bench's profile of the chain's worker put them among its largest
 * costs (every transaction is decoded for each simulation and each send).
 *
 * Returns exactly what kit's two decoders give (the same objects, the same optional fields left
 * out), or undefined for anything else: bytes kit refuses and the odd forms kit accepts (an array
 * cut off at the end of the bytes reads as empty; trailing bytes are ignored; version 1). The
 * caller then decodes with kit itself, so a refusal stays kit's, word for word.
 */
export function decodeTransactionBytes(bytes: Uint8Array): DecodedTransactionBytes | undefined {
  const length = bytes.length;
  // Signatures first: their count is a one-byte compact-u16 (a set high bit is v1's message-first form).
  const signatureCount = bytes[0];
  if (signatureCount === undefined || signatureCount >= 0x80) return undefined;
  const messageAt = 1 + 64 * signatureCount;
  if (messageAt >= length) return undefined;
  let at = messageAt;
  const first = bytes[at] as number;
  let version: "legacy" | 0 = "legacy";
  if (first & 0x80) {
    if (first !== 0x80) return undefined;
    version = 0;
    at++;
  }
  if (at + 3 > length) return undefined;
  const header = {
    numSignerAccounts: bytes[at] as number,
    numReadonlySignerAccounts: bytes[at + 1] as number,
    numReadonlyNonSignerAccounts: bytes[at + 2] as number,
  };
  at += 3;
  const keyCount = shortU16(bytes, at);
  if (keyCount === undefined) return undefined;
  at = keyCount.next;
  // Kit pairs the message's first signers with the signatures and refuses a count that differs.
  if (header.numSignerAccounts !== signatureCount || keyCount.value < signatureCount) return undefined;
  if (at + 32 * keyCount.value + 32 > length) return undefined;
  const staticAccounts: Address[] = [];
  for (let i = 0; i < keyCount.value; i++, at += 32) {
    staticAccounts.push(base58Address(bytes.subarray(at, at + 32)) as Address);
  }
  const lifetimeToken = base58Address(bytes.subarray(at, at + 32));
  at += 32;
  const instructionCount = shortU16(bytes, at);
  if (instructionCount === undefined) return undefined;
  at = instructionCount.next;
  const instructions: Instruction[] = [];
  for (let i = 0; i < instructionCount.value; i++) {
    const programAddressIndex = bytes[at];
    if (programAddressIndex === undefined) return undefined;
    const indices = u8Array(bytes, at + 1);
    if (indices === undefined) return undefined;
    const size = shortU16(bytes, indices.next);
    if (size === undefined || size.next + size.value > length) return undefined;
    at = size.next + size.value;
    const data = bytes.slice(size.next, at);
    // Kit leaves out an empty account list and empty data.
    instructions.push({
      programAddressIndex,
      ...(indices.value.length > 0 ? { accountIndices: indices.value } : null),
      ...(data.byteLength > 0 ? { data } : null),
    });
  }
  let addressTableLookups: Lookup[] | undefined;
  if (version === 0) {
    const lookupCount = shortU16(bytes, at);
    if (lookupCount === undefined) return undefined;
    at = lookupCount.next;
    const lookups: Lookup[] = [];
    for (let i = 0; i < lookupCount.value; i++) {
      if (at + 32 > length) return undefined;
      const lookupTableAddress = base58Address(bytes.subarray(at, at + 32)) as Address;
      const writable = u8Array(bytes, at + 32);
      if (writable === undefined) return undefined;
      const readonly = u8Array(bytes, writable.next);
      if (readonly === undefined) return undefined;
      at = readonly.next;
      lookups.push({ lookupTableAddress, writableIndexes: writable.value, readonlyIndexes: readonly.value });
    }
    if (lookups.length > 0) addressTableLookups = lookups;
  }
  if (at !== length) return undefined;
  const messageBytes = bytes.slice(messageAt) as unknown as TransactionMessageBytes;
  const signatures: Record<string, SignatureBytes | null> = {};
  for (let i = 0; i < signatureCount; i++) {
    const signature = bytes.slice(1 + 64 * i, 1 + 64 * (i + 1));
    signatures[staticAccounts[i] as string] = signature.every((b) => b === 0)
      ? null
      : (signature as SignatureBytes);
  }
  const message =
    version === 0
      ? {
          version,
          header,
          staticAccounts,
          lifetimeToken,
          instructions,
          ...(addressTableLookups === undefined ? {} : { addressTableLookups }),
        }
      : { header, staticAccounts, lifetimeToken, instructions, version };
  return {
    transaction: { messageBytes, signatures: Object.freeze(signatures) } as Transaction,
    message: message as DecodedTransactionBytes["message"],
  };
}

/**
 * A compact-u16 as kit reads it (one to three bytes, at most 0xffff), or undefined where kit
 * would throw or, at the very end of the bytes, read an array as empty.
 */
function shortU16(bytes: Uint8Array, at: number): { value: number; next: number } | undefined {
  let value = 0;
  for (let i = 0; i < 3; i++) {
    const byte = bytes[at + i];
    if (byte === undefined) return undefined;
    value |= (byte & 0x7f) << (i * 7);
    if ((byte & 0x80) === 0) return value > 0xffff ? undefined : { value, next: at + i + 1 };
  }
  return undefined;
}

/** A compact-u16-prefixed array of u8s. */
function u8Array(bytes: Uint8Array, at: number): { value: number[]; next: number } | undefined {
  const count = shortU16(bytes, at);
  if (count === undefined || count.next + count.value > bytes.length) return undefined;
  return {
    value: Array.from(bytes.subarray(count.next, count.next + count.value)),
    next: count.next + count.value,
  };
}

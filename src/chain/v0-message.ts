import { base58Address } from "./base58-address.ts";

/**
 * A compiled v0 message's layout, read straight from its bytes: where its parts are, its keys in
 * base58 (without kit's BigInt codec). A swap's message is compiled once; its signed form changes
 * only fixed-size fields in place (see swap-transaction.ts), which needs their offsets.
 */
export interface V0Message {
  readonly numSignerAccounts: number;
  readonly numReadonlySignerAccounts: number;
  readonly numReadonlyNonSignerAccounts: number;
  readonly staticAccounts: readonly string[];
  /** Offset of the 32-byte recent blockhash. */
  readonly blockhashAt: number;
  readonly instructions: readonly {
    readonly programIdIndex: number;
    readonly dataAt: number;
    readonly dataLength: number;
  }[];
  readonly addressTableLookups: readonly {
    readonly lookupTableAddress: string;
    readonly writableIndexes: readonly number[];
    readonly readonlyIndexes: readonly number[];
  }[];
}

/** Reads a compiled v0 message (version prefix 0x80 first); throws on bytes that are not one. */
export function parseV0Message(bytes: Uint8Array): V0Message {
  let at = 0;
  const byte = () => {
    if (at >= bytes.length) throw new RangeError("the message ends early");
    return bytes[at++] as number;
  };
  // Solana's compact-u16: 7 bits a byte, at most three bytes.
  const compact = () => {
    let value = 0;
    for (let shift = 0; shift < 21; shift += 7) {
      const b = byte();
      value |= (b & 0x7f) << shift;
      if ((b & 0x80) === 0) return value;
    }
    throw new RangeError("a compact-u16 is too long");
  };
  const take = (length: number) => {
    if (at + length > bytes.length) throw new RangeError("the message ends early");
    const part = bytes.subarray(at, at + length);
    at += length;
    return part;
  };
  if (byte() !== 0x80) throw new RangeError("not a v0 message");
  const numSignerAccounts = byte();
  const numReadonlySignerAccounts = byte();
  const numReadonlyNonSignerAccounts = byte();
  const staticAccounts = Array.from({ length: compact() }, () => base58Address(take(32)));
  const blockhashAt = at;
  take(32);
  const instructions = Array.from({ length: compact() }, () => {
    const programIdIndex = byte();
    take(compact());
    const dataLength = compact();
    const dataAt = at;
    take(dataLength);
    return { programIdIndex, dataAt, dataLength };
  });
  const addressTableLookups = Array.from({ length: compact() }, () => ({
    lookupTableAddress: base58Address(take(32)),
    writableIndexes: [...take(compact())],
    readonlyIndexes: [...take(compact())],
  }));
  if (at !== bytes.length) throw new RangeError("the message has bytes past its end");
  return {
    numSignerAccounts,
    numReadonlySignerAccounts,
    numReadonlyNonSignerAccounts,
    staticAccounts,
    blockhashAt,
    instructions,
    addressTableLookups,
  };
}

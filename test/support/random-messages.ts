/**
 * Random keys and compiled messages (kit's compiled form, legacy or v0) for the tests that hold a
 * hand-written codec to kit's: the embedded chain's decoders (transaction-bytes.test.ts) and the
 * service's message encoder (compiled-transaction.test.ts).
 */
import { randomBytes } from "node:crypto";
import { type Address, getAddressDecoder } from "@solana/kit";

const addressDecoder = getAddressDecoder();
export const key = (zeros = 0) => {
  const bytes = new Uint8Array(randomBytes(32));
  bytes.fill(0, 0, zeros);
  return addressDecoder.decode(bytes);
};
/** A random integer from 0 to n - 1. */
export const int = (n: number) => Math.floor(Math.random() * n);

/** A random legacy or v0 message, as kit's compiled form, with the given number of signers. */
export function randomMessage(version: "legacy" | 0, signers: number) {
  const keys = signers + int(12);
  const staticAccounts = Array.from({ length: keys }, (_, i) => key(i % 4 === 0 ? int(3) : 0) as Address);
  const instructions = Array.from({ length: int(6) }, () => {
    const indices = Array.from({ length: int(4) === 0 ? 0 : int(20) }, () => int(256));
    // Lengths past 127 take a two-byte compact-u16.
    const size = [0, 1, 9, 127, 128, 300][int(6)] as number;
    return {
      programAddressIndex: int(256),
      ...(indices.length > 0 ? { accountIndices: indices } : {}),
      ...(size > 0 ? { data: new Uint8Array(randomBytes(size)) } : {}),
    };
  });
  const lookups = Array.from({ length: version === 0 ? int(3) : 0 }, () => ({
    lookupTableAddress: key() as Address,
    writableIndexes: Array.from({ length: int(5) }, () => int(256)),
    readonlyIndexes: Array.from({ length: int(5) }, () => int(256)),
  }));
  return {
    version,
    header: {
      numSignerAccounts: signers,
      numReadonlySignerAccounts: int(2),
      numReadonlyNonSignerAccounts: int(3),
    },
    staticAccounts,
    lifetimeToken: key(int(4) === 0 ? 2 : 0),
    instructions,
    ...(lookups.length > 0 ? { addressTableLookups: lookups } : {}),
  } as const;
}

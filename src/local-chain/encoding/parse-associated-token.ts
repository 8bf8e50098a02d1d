import type { ParsedInfo } from "./instruction-reader.ts";

/** Associated Token Account instructions as Agave's parse_associated_token.rs parses them. */
export function parseAssociatedToken(data: Uint8Array, a: readonly string[]): ParsedInfo | undefined {
  // No data is the original Create; otherwise a one-byte borsh enum and nothing after it.
  const kind = data.length === 0 ? 0 : data.length === 1 ? data[0] : undefined;
  if (kind === 0 || kind === 1) {
    if (a.length < 6) return undefined;
    return {
      type: kind === 0 ? "create" : "createIdempotent",
      info: {
        source: a[0],
        account: a[1],
        wallet: a[2],
        mint: a[3],
        systemProgram: a[4],
        tokenProgram: a[5],
      },
    };
  }
  if (kind === 2) {
    if (a.length < 7) return undefined;
    return {
      type: "recoverNested",
      info: {
        nestedSource: a[0],
        nestedMint: a[1],
        destination: a[2],
        nestedOwner: a[3],
        ownerMint: a[4],
        wallet: a[5],
        tokenProgram: a[6],
      },
    };
  }
  return undefined;
}

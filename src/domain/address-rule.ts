import { isSignature } from "@solana/keys";

/**
 * The rules for Solana values as validation messages state them. The checks themselves are
 * @solana/addresses' `isAddress` and @solana/keys' `isSignature`: base58 that decodes to exactly
 * 32 and 64 bytes, which the length of the text alone does not tell.
 */
export const ADDRESS_RULE = "must be a base58-encoded 32-byte Solana address";
export const SIGNATURE_RULE = "must be a base58-encoded 64-byte transaction signature";

const BASE58 = /^[1-9A-HJ-NP-Za-km-z]+$/;

/**
 * @solana/keys' `isSignature`, which throws (instead of answering false) for text of a signature's
 * length with characters outside base58 ("aaaa…😀😀", found by the fuzz test): those are refused
 * here first.
 */
export function isTransactionSignature(text: string): boolean {
  return BASE58.test(text) && isSignature(text);
}

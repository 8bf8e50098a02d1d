/**
 * The rules for Solana values as validation messages state them. The checks themselves are
 * @solana/addresses' `isAddress` and @solana/keys' `isSignature`: base58 that decodes to exactly
 * 32 and 64 bytes, which the length of the text alone does not tell.
 */
export const ADDRESS_RULE = "must be a base58-encoded 32-byte Solana address";
export const SIGNATURE_RULE = "must be a base58-encoded 64-byte transaction signature";

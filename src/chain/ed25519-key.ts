import { createPrivateKey, createPublicKey, type KeyObject, sign } from "node:crypto";
import { inspect } from "node:util";
import type { Address } from "@solana/addresses";
import { base58Address } from "./base58-address.ts";

/**
 * An Ed25519 signing key for Solana transactions, on Node's own crypto (synchronous, and a few
 * times faster than WebCrypto's). The secret stays inside: the object shows, logs and serialises
 * as its address alone, so a key that reaches a log line by mistake leaks nothing.
 */
export interface SigningKey {
  readonly address: Address;
  /** The key's Ed25519 signature of `message`. */
  sign(message: Uint8Array): Uint8Array;
}

/** DER prefix of an Ed25519 private key in PKCS#8 form; the 32 seed bytes follow. */
const PKCS8_PREFIX = Buffer.from("302e020100300506032b657004220420", "hex");

/** The key whose 32-byte Ed25519 seed is `seed`. */
export function signingKeyFromSeed(seed: Uint8Array): SigningKey & { readonly publicKey: Uint8Array } {
  const privateKey: KeyObject = createPrivateKey({
    key: Buffer.concat([PKCS8_PREFIX, seed]),
    format: "der",
    type: "pkcs8",
  });
  const publicKey = new Uint8Array(
    createPublicKey(privateKey).export({ format: "der", type: "spki" }).subarray(12),
  );
  // Not kit's address decoder: its BigInt base58 costs as much as the rest of a taker's naming.
  const address = base58Address(publicKey) as Address;
  return {
    address,
    publicKey,
    sign: (message) => new Uint8Array(sign(null, message, privateKey)),
    toJSON: () => ({ address }),
    [inspect.custom]: () => `SigningKey(${address})`,
  } as SigningKey & { readonly publicKey: Uint8Array };
}

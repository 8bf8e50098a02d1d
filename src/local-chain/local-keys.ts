import { createHash, createPrivateKey, createPublicKey, type KeyObject, sign } from "node:crypto";
import { type Address, getAddressDecoder } from "@solana/kit";

/** A key of the local chain's own: the faucet, the token authority, the seeded wallets. */
export interface LocalKey {
  readonly address: Address;
  /** The key's Ed25519 signature of `message`. */
  sign(message: Uint8Array): Uint8Array;
  /** The 64-byte secret key in the Solana CLI's keypair-file form (seed, then public key). */
  readonly keypairBytes: Uint8Array;
}

/** DER prefix of an Ed25519 private key in PKCS#8 form; the 32 seed bytes follow. */
const PKCS8_PREFIX = Buffer.from("302e020100300506032b657004220420", "hex");

/**
 * The local chain's key named `name`: derived from the name alone, so the faucet, the token
 * authority and the seeded wallets have the same addresses on every machine and every start, and
 * a README can name them. They hold value on this local chain only; anyone can derive them.
 */
export function localKey(name: string): LocalKey {
  const seed = createHash("sha256").update(`token-agent-service local chain: ${name}`).digest();
  return keyFromSeed(seed);
}

/** The key whose 32-byte Ed25519 seed is `seed`. */
export function keyFromSeed(seed: Uint8Array): LocalKey {
  const privateKey: KeyObject = createPrivateKey({
    key: Buffer.concat([PKCS8_PREFIX, seed]),
    format: "der",
    type: "pkcs8",
  });
  const publicBytes = createPublicKey(privateKey).export({ format: "der", type: "spki" }).subarray(12);
  const keypairBytes = new Uint8Array(64);
  keypairBytes.set(seed, 0);
  keypairBytes.set(publicBytes, 32);
  return {
    address: getAddressDecoder().decode(publicBytes),
    sign: (message) => new Uint8Array(sign(null, message, privateKey)),
    keypairBytes,
  };
}

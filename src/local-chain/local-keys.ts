import { createHash } from "node:crypto";
import { type SigningKey, signingKeyFromSeed } from "../chain/ed25519-key.ts";

/** A key of the local chain's own: the faucet, the token authority, the seeded wallets. */
export interface LocalKey extends SigningKey {
  /** The 64-byte secret key in the Solana CLI's keypair-file form (seed, then public key). */
  readonly keypairBytes: Uint8Array;
}

/**
 * The local chain's key named `name`: derived from the name alone, so the faucet, the token
 * authority and the seeded wallets have the same addresses on every machine and every start, and
 * a README can name them. They hold value on this local chain only; anyone can derive them.
 */
export function localKey(name: string): LocalKey {
  const seed = createHash("sha256").update(`token-agent-service local chain: ${name}`).digest();
  const key = signingKeyFromSeed(seed);
  const keypairBytes = new Uint8Array(64);
  keypairBytes.set(seed, 0);
  keypairBytes.set(key.publicKey, 32);
  return { address: key.address, sign: key.sign, keypairBytes };
}

import { createHash } from "node:crypto";
import { type SigningKey, signingKeyFromSeed } from "../../chain/ed25519-key.ts";

/** A key of the local chain's own: the faucet, the seeded wallets, the chain's secret keys. */
export interface LocalKey extends SigningKey {
  /** The 64-byte secret key in the Solana CLI's keypair-file form (seed, then public key). */
  readonly keypairBytes: Uint8Array;
}

/**
 * The local chain's public key named `name`: derived from the name alone, so the faucet and the
 * seeded wallets have the same addresses on every machine and every start, and a README can name
 * them. Anyone can derive them, so they hold nothing the service depends on: the pools and the
 * mints' authority have keys of each chain's own (chain-keys.ts).
 */
export function localKey(name: string): LocalKey {
  return localKeyFromSeed(createHash("sha256").update(`token-agent-service local chain: ${name}`).digest());
}

/** The local key whose 32-byte Ed25519 seed is `seed`. */
export function localKeyFromSeed(seed: Uint8Array): LocalKey {
  const key = signingKeyFromSeed(seed);
  const keypairBytes = new Uint8Array(64);
  keypairBytes.set(seed, 0);
  keypairBytes.set(key.publicKey, 32);
  return { address: key.address, sign: key.sign, keypairBytes };
}

import { hkdfSync, randomBytes } from "node:crypto";
import { inspect } from "node:util";
import { type LocalKey, localKeyFromSeed } from "./local-keys.ts";

/**
 * The keys a local chain holds value with: its pools' keys and its mints' authority. Unlike the
 * faucet's and the seeded wallets' (local-keys.ts), they come from a random seed made with the
 * chain (when a chain starts from the genesis) and kept in its state file (LOCAL_SOLANA_STATE),
 * never from public names: a local client that can derive a key can sign as it, and a pool's key
 * moves the pool's vaults.
 */
export interface ChainKeys {
  /** The seed, 32 bytes as hex: what the state file keeps. */
  readonly seed: string;
  /** Mint and metadata update authority of the chain's copies of the catalog's tokens. */
  readonly authority: LocalKey;
  /** The key of the pool named `name` ("SOL/USDC"): it owns the pool's vaults. */
  pool(name: string): LocalKey;
}

const SEED_BYTES = 32;
/** HKDF's salt: keys of this chain's seed are of no use as any other seed's. */
const SALT = "token-agent-service local chain keys";

/** A new chain's seed: 32 random bytes, hex. */
export function newChainKeySeed(): string {
  return randomBytes(SEED_BYTES).toString("hex");
}

/** The keys of `seed` (64 hex digits, as newChainKeySeed makes and the state file keeps). */
export function createChainKeys(seed: string): ChainKeys {
  if (!/^[0-9a-f]{64}$/.test(seed)) throw new Error("keySeed: must be 32 bytes as 64 lower-case hex digits");
  const secret = Buffer.from(seed, "hex");
  const keyOf = (name: string) =>
    localKeyFromSeed(new Uint8Array(hkdfSync("sha256", secret, SALT, name, SEED_BYTES)));
  const pools = new Map<string, LocalKey>();
  const authority = keyOf("token authority");
  return {
    seed,
    authority,
    pool(name) {
      let key = pools.get(name);
      if (key === undefined) {
        key = keyOf(`pool ${name}`);
        pools.set(name, key);
      }
      return key;
    },
    // The seed is a secret: a log line that holds these keys shows the authority's address alone.
    toJSON: () => ({ authority: authority.address }),
    [inspect.custom]: () => `ChainKeys(authority ${authority.address})`,
  } as ChainKeys;
}

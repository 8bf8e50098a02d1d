import { hkdfSync } from "node:crypto";
import { inspect } from "node:util";
import { type SigningKey, signingKeyFromSeed } from "./ed25519-key.ts";

/**
 * The delegates the service signs token transfers with: one key for each (owner, wallet) pair.
 *
 * Why: an SPL token account's allowance belongs to a delegate, not to an agent. With one shared
 * delegate, anybody able to create an agent could name another owner's approved wallet as its
 * source and spend that allowance (a confused deputy). A key per (owner, wallet) makes an approval
 * usable only by the agents of the owner it was signed for.
 *
 * How: HKDF-SHA256 (RFC 5869) over the master secret (DELEGATE_SEED), with a fixed salt and an
 * `info` of a domain-separation label, a version and the two names, each length-prefixed so that no
 * two pairs share an encoding. Its 32 bytes are the Ed25519 seed of the delegate's key. Every
 * replica derives the same keys from the same secret, so nothing is stored; changing the label's
 * version is how a future scheme would move to new keys.
 */
export interface DelegateKeys {
  /** The delegate's signing key for `owner`'s agents spending from `wallet`. */
  keyOf(owner: string, wallet: string): SigningKey;
  /** Its address (base58): what the wallet approves. */
  addressOf(owner: string, wallet: string): string;
  /**
   * The taker of one swap run: the key a Swap API's route is built for and signed by. Derived
   * (never stored) from the owner, the wallet, the agent and the slot's idempotency key, so a retry
   * after a crash rebuilds the same key; it holds no standing authority over anything, only what
   * the run's own transfer puts in its account for the length of one transaction.
   */
  takerOf(owner: string, wallet: string, agentId: string, slot: string): SigningKey;
}

/** HKDF's salt: fixed, as RFC 5869 allows; it names the application, not a secret. */
const SALT = Buffer.from("token-agent-service");
/** The derivation's label and version: part of every `info`. */
export const DELEGATE_DERIVATION_LABEL = "token-agent-service/delegate/v1";

/** The per-run swap taker's label and version: a derivation apart from the delegates'. */
export const TAKER_DERIVATION_LABEL = "token-agent-service/swap-taker/v1";

/** Derived keys kept, so a busy wallet's runs do not derive its key again (about 60 us each). */
const KEPT_KEYS = 10_000;

/** The `info` of one (owner, wallet) pair: label, owner and wallet, each as u16 length + UTF-8. */
export function delegateInfo(owner: string, wallet: string): Buffer {
  return lengthPrefixed([DELEGATE_DERIVATION_LABEL, owner, wallet]);
}

/** The `info` of one swap run's taker: label, owner, wallet, agent and slot, framed as delegateInfo. */
export function takerInfo(owner: string, wallet: string, agentId: string, slot: string): Buffer {
  return lengthPrefixed([TAKER_DERIVATION_LABEL, owner, wallet, agentId, slot]);
}

/** The 32-byte Ed25519 seed of one swap run's taker under `secret`. */
export function takerSeed(
  secret: Uint8Array,
  owner: string,
  wallet: string,
  agentId: string,
  slot: string,
): Uint8Array {
  return new Uint8Array(hkdfSync("sha256", secret, SALT, takerInfo(owner, wallet, agentId, slot), 32));
}

/** Each part as u16 big-endian length + UTF-8, so that no two lists of parts share an encoding. */
function lengthPrefixed(texts: readonly string[]): Buffer {
  const parts = texts.map((part) => Buffer.from(part, "utf8"));
  const out: Buffer[] = [];
  for (const part of parts) {
    if (part.length > 0xffff) throw new RangeError("a delegate derivation input is over 65535 bytes");
    const length = Buffer.alloc(2);
    length.writeUInt16BE(part.length);
    out.push(length, part);
  }
  return Buffer.concat(out);
}

/** The 32-byte Ed25519 seed of the delegate for (owner, wallet) under `secret`. */
export function delegateSeed(secret: Uint8Array, owner: string, wallet: string): Uint8Array {
  return new Uint8Array(hkdfSync("sha256", secret, SALT, delegateInfo(owner, wallet), 32));
}

export function createDelegateKeys(options: {
  /** The master secret: DELEGATE_SEED's 32 bytes. Copied; the caller may wipe its own. */
  secret: Uint8Array;
}): DelegateKeys {
  if (options.secret.length !== 32) throw new RangeError("the delegate master secret must be 32 bytes");
  const secret = Uint8Array.from(options.secret);
  /** Most recently used last (a Map keeps insertion order). */
  const kept = new Map<string, SigningKey>();
  const keyOf = (owner: string, wallet: string): SigningKey => {
    const id = `${owner.length}:${owner}:${wallet}`;
    const found = kept.get(id);
    if (found !== undefined) {
      kept.delete(id);
      kept.set(id, found);
      return found;
    }
    const seed = delegateSeed(secret, owner, wallet);
    const key = signingKeyFromSeed(seed);
    seed.fill(0);
    kept.set(id, key);
    if (kept.size > KEPT_KEYS) kept.delete(kept.keys().next().value as string);
    return key;
  };
  return {
    keyOf,
    addressOf: (owner, wallet) => keyOf(owner, wallet).address,
    // Not kept: each run's taker is used by that run only.
    takerOf(owner, wallet, agentId, slot) {
      const seed = takerSeed(secret, owner, wallet, agentId, slot);
      const key = signingKeyFromSeed(seed);
      seed.fill(0);
      return key;
    },
    // The secret never leaves: logged, serialised or inspected, this shows nothing of it.
    toJSON: () => ({ delegates: "derived per owner and wallet" }),
    [inspect.custom]: () => "DelegateKeys(derived per owner and wallet)",
  } as DelegateKeys;
}

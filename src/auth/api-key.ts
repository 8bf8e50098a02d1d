import { createHash, randomBytes } from "node:crypto";

/** What a key may do. TokenService needs tokens:read; AgentService reads and writes; ApiKeyService admin. */
export const SCOPES = ["tokens:read", "agents:read", "agents:write", "admin"] as const;
export type Scope = (typeof SCOPES)[number];

/** Every key starts with this, so a leaked one is recognisable (secret scanners, logs, chats). */
export const KEY_PREFIX = "tas_";

/** A key as stored: its hash, never the key. */
export interface ApiKeyRecord {
  /** Public id, safe to log and show: `tas_<keyId>_<secret>` is the key. */
  readonly keyId: string;
  /** SHA-256 of the whole key, hex. */
  readonly hash: string;
  readonly owner: string;
  readonly scopes: readonly Scope[];
  readonly createdAt: Date;
  readonly revokedAt?: Date;
  /**
   * Caps an admin set on this key over the service's caps per owner (MAX_AGENTS_PER_OWNER,
   * MAX_PENDING_PER_OWNER), for CreateAgent calls made with it; absent: the service's.
   */
  readonly maxAgents?: number;
  readonly maxPending?: number;
}

/**
 * A fresh key: 256 random bits of secret behind the prefix and a 64-bit public id. SHA-256 is
 * enough to store it: the key is random, so there is nothing for a slow hash to protect.
 */
export function newApiKey(): { keyId: string; key: string } {
  const keyId = newKeyId();
  return { keyId, key: `${KEY_PREFIX}${keyId}_${randomBytes(32).toString("base64url")}` };
}

/**
 * 64 random bits in base64url, drawn again while they start with "-": a command line reads such an
 * id as an option (`npm run keys -- revoke -x…`), and 1 id in 64 would.
 */
function newKeyId(): string {
  for (;;) {
    const keyId = randomBytes(8).toString("base64url");
    if (!keyId.startsWith("-")) return keyId;
  }
}

/** The stored form of a key. */
export function hashKey(key: string): string {
  return createHash("sha256").update(key).digest("hex");
}

export function isScope(value: string): value is Scope {
  return (SCOPES as readonly string[]).includes(value);
}

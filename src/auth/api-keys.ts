import { timingSafeEqual } from "node:crypto";
import { alternatives, type FieldViolation, InvalidArgumentError, quote } from "../domain/errors.ts";
import { pageLimit } from "../domain/page-limit.ts";
import { type ApiKeyRecord, hashKey, isScope, KEY_PREFIX, newApiKey, SCOPES, type Scope } from "./api-key.ts";
import type { ApiKeyPage, ApiKeyStore } from "./api-key-store.ts";

/** Who a verified key speaks for. */
export interface Caller {
  readonly keyId: string;
  readonly owner: string;
  readonly scopes: ReadonlySet<Scope>;
  /** Caps an admin set on the key (see ApiKeyRecord); absent: the service's. */
  readonly caps?: { readonly maxAgents?: number; readonly maxPending?: number };
}

export interface ApiKeys {
  /** Makes a key; the key itself is in this answer only. */
  /** `maxAgents`, `maxPending`: the key's own caps per owner; 0 or absent: the service's. */
  create(input: {
    owner: string;
    scopes: readonly string[];
    maxAgents?: number;
    maxPending?: number;
  }): Promise<{ record: ApiKeyRecord; key: string }>;
  list(query: { owner: string; limit: number; offset: number }): Promise<ApiKeyPage>;
  /** True when the key was revoked now; false when unknown or revoked before. */
  revoke(keyId: string): Promise<boolean>;
  /**
   * Which of these key ids are revoked, as the store says now (no cache): for what a key opened
   * that outlasts its call, such as a stream. The bootstrap admin key is never revoked.
   */
  revokedAmong(keyIds: readonly string[]): Promise<ReadonlySet<string>>;
  /** Tells `listener` of each key revoked through this object; returns the way to stop. */
  onRevoked(listener: (keyId: string) => void): () => void;
  /**
   * How long a verified key is trusted without asking the store again: a revoke reaches the
   * other replicas' calls within this long, and their streams should go no slower.
   */
  readonly cacheTtlMs: number;
  /**
   * The caller a presented key speaks for; undefined for an unknown or revoked key. With
   * `cachedOnly`, only keys verified recently (and the admin key) are recognised, and the store is
   * not asked: for callers that have spent their budget of failed attempts.
   */
  verify(key: string, options?: { cachedOnly?: boolean }): Promise<Caller | undefined>;
}

export interface ApiKeysOptions {
  readonly store: ApiKeyStore;
  /** ADMIN_API_KEY: a bootstrap key with every scope, owner "admin", from the environment. */
  readonly adminKey?: string | undefined;
  readonly now?: () => Date;
  /** How long a verified key is trusted without asking the store again. */
  readonly cacheTtlMs?: number;
  /** Most keys kept verified at once; the oldest go first. */
  readonly cacheMaxEntries?: number;
}

/** The owner of the bootstrap admin key, and its key id in logs. */
export const ADMIN_OWNER = "admin";
/** A key is short; anything longer is refused before it is hashed or looked up. */
const MAX_KEY_CHARS = 256;
const OWNER = /^[A-Za-z0-9._-]{1,128}$/;
const OWNER_RULE = "must be 1 to 128 letters, digits, dots, dashes or underscores";
const EVERY_SCOPE: ReadonlySet<Scope> = new Set(SCOPES);
/**
 * Owners no new key may have: the bootstrap admin's, and the principal of every caller when
 * authentication is off. A key of either would see their agents and derive their delegates.
 * Compared without case, so that no near-twin of them is made either.
 */
export const RESERVED_OWNERS: readonly string[] = [ADMIN_OWNER, "anonymous"];
/** The largest cap a key may carry (as MAX_AGENTS_PER_OWNER may be set). */
const MAX_CAP = 10_000_000;

/**
 * The API key rules: creating, listing and revoking keys, and verifying the key a call presents.
 * Verified keys are cached for a few seconds, so an authenticated call costs a hash and a map
 * lookup rather than a database round trip; a revoke here drops its key from this cache at once,
 * and reaches other replicas' caches when their entries expire.
 */
export function createApiKeys(options: ApiKeysOptions): ApiKeys {
  const { store } = options;
  const now = options.now ?? (() => new Date());
  const ttlMs = options.cacheTtlMs ?? 5_000;
  const maxEntries = options.cacheMaxEntries ?? 10_000;
  const adminHash =
    options.adminKey === undefined ? undefined : Buffer.from(hashKey(options.adminKey), "hex");
  const cache = new Map<string, { caller: Caller | undefined; expires: number }>();
  const revokedListeners = new Set<(keyId: string) => void>();

  function remember(hash: string, caller: Caller | undefined): void {
    if (cache.size >= maxEntries) cache.delete(cache.keys().next().value as string);
    cache.set(hash, { caller, expires: Date.now() + ttlMs });
  }

  return {
    async create(input) {
      const violations: FieldViolation[] = [];
      if (!OWNER.test(input.owner)) violations.push({ field: "owner", description: OWNER_RULE });
      else if (RESERVED_OWNERS.includes(input.owner.toLowerCase())) {
        violations.push({
          field: "owner",
          description: `must not be ${alternatives(RESERVED_OWNERS)}: those owners are reserved`,
        });
      }
      const scopes: Scope[] = [];
      if (input.scopes.length === 0) {
        violations.push({
          field: "scopes",
          description: `must name at least one of ${alternatives(SCOPES)}`,
        });
      }
      input.scopes.slice(0, 10).forEach((scope, i) => {
        if (!isScope(scope)) {
          violations.push({
            field: `scopes[${i}]`,
            description: `must be one of ${alternatives(SCOPES)} but is ${quote(scope)}`,
          });
        } else if (!scopes.includes(scope)) scopes.push(scope);
      });
      if (input.scopes.length > 10)
        violations.push({ field: "scopes", description: "must name at most 10 scopes" });
      const caps: { maxAgents?: number; maxPending?: number } = {};
      for (const [field, value] of [
        ["maxAgents", input.maxAgents],
        ["maxPending", input.maxPending],
      ] as const) {
        if (value === undefined || value === 0) continue;
        if (!Number.isInteger(value) || value < 1 || value > MAX_CAP) {
          violations.push({
            field,
            description: `must be 0 (the service's cap) or 1 to ${MAX_CAP} but is ${value}`,
          });
        } else caps[field] = value;
      }
      if (violations.length > 0) throw new InvalidArgumentError(violations);
      const { keyId, key } = newApiKey();
      const record: ApiKeyRecord = {
        keyId,
        hash: hashKey(key),
        owner: input.owner,
        scopes,
        createdAt: now(),
        ...caps,
      };
      await store.insert(record);
      return { record, key };
    },

    async list(query) {
      const violations: FieldViolation[] = [];
      if (query.owner !== "" && !OWNER.test(query.owner))
        violations.push({ field: "owner", description: OWNER_RULE });
      const limit = pageLimit(query.limit, violations);
      if (!Number.isInteger(query.offset) || query.offset < 0 || query.offset > 1_000_000) {
        violations.push({
          field: "offset",
          description: `must be between 0 and 1000000 but is ${query.offset}`,
        });
      }
      if (violations.length > 0) throw new InvalidArgumentError(violations);
      return store.list({
        ...(query.owner === "" ? {} : { owner: query.owner }),
        limit,
        offset: query.offset,
      });
    },

    async revoke(keyId) {
      if (keyId === "" || keyId.length > 64) {
        throw InvalidArgumentError.field(
          "keyId",
          "must be the id of a key (as CreateApiKey and ListApiKeys answer it)",
        );
      }
      const result = await store.revoke(keyId, now());
      if (result.hash !== undefined) cache.delete(result.hash);
      if (result.revoked) for (const listener of revokedListeners) listener(keyId);
      return result.revoked;
    },

    async revokedAmong(keyIds) {
      const stored = keyIds.filter((keyId) => keyId !== ADMIN_OWNER);
      return stored.length === 0 ? new Set() : store.revokedAmong(stored);
    },

    onRevoked(listener) {
      revokedListeners.add(listener);
      return () => revokedListeners.delete(listener);
    },

    cacheTtlMs: ttlMs,

    async verify(key, verifyOptions) {
      if (key.length === 0 || key.length > MAX_KEY_CHARS) return undefined;
      const hash = hashKey(key);
      const digest = Buffer.from(hash, "hex");
      // Compared in constant time, as every stored key is below.
      if (adminHash !== undefined && timingSafeEqual(digest, adminHash)) {
        return { keyId: ADMIN_OWNER, owner: ADMIN_OWNER, scopes: EVERY_SCOPE };
      }
      if (!key.startsWith(KEY_PREFIX)) return undefined;
      const cached = cache.get(hash);
      if (cached !== undefined && cached.expires > Date.now()) return cached.caller;
      if (verifyOptions?.cachedOnly === true) return undefined;
      const record = await store.findByHash(hash);
      const matches = record !== undefined && timingSafeEqual(Buffer.from(record.hash, "hex"), digest);
      const caller =
        matches && record.revokedAt === undefined
          ? {
              keyId: record.keyId,
              owner: record.owner,
              scopes: new Set(record.scopes),
              ...(record.maxAgents === undefined && record.maxPending === undefined
                ? {}
                : {
                    caps: {
                      ...(record.maxAgents === undefined ? {} : { maxAgents: record.maxAgents }),
                      ...(record.maxPending === undefined ? {} : { maxPending: record.maxPending }),
                    },
                  }),
            }
          : undefined;
      // Unknown keys are not remembered (anyone can make up more of them than a cache holds);
      // the per-address limit bounds how often they reach the store.
      if (record !== undefined) remember(hash, caller);
      return caller;
    },
  };
}

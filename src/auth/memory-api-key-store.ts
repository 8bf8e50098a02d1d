import type { ApiKeyRecord } from "./api-key.ts";
import type { ApiKeyPage, ApiKeyStore } from "./api-key-store.ts";

/** API keys in this process only, for the in-memory mode: they go when the process does. */
export function createMemoryApiKeyStore(): ApiKeyStore {
  const byHash = new Map<string, ApiKeyRecord>();
  const byId = new Map<string, ApiKeyRecord>();
  return {
    async insert(record) {
      if (byHash.has(record.hash) || byId.has(record.keyId)) throw new Error("duplicate API key");
      byHash.set(record.hash, record);
      byId.set(record.keyId, record);
    },
    async findByHash(hash) {
      return byHash.get(hash);
    },
    async list({ owner, limit, offset }): Promise<ApiKeyPage> {
      const matching = [...byId.values()]
        .filter((k) => owner === undefined || k.owner === owner)
        .sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime() || (a.keyId < b.keyId ? -1 : 1));
      return { keys: matching.slice(offset, offset + limit), total: matching.length };
    },
    async revoke(keyId, at) {
      const record = byId.get(keyId);
      if (record === undefined || record.revokedAt !== undefined) return { revoked: false };
      const revoked = { ...record, revokedAt: at };
      byId.set(keyId, revoked);
      byHash.set(record.hash, revoked);
      return { revoked: true, hash: record.hash };
    },
    async revokedAmong(keyIds) {
      return new Set(keyIds.filter((keyId) => byId.get(keyId)?.revokedAt !== undefined));
    },
  };
}

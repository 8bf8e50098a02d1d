import type { ApiKeyRecord } from "./api-key.ts";

/** A page of keys, newest first, with the number of keys that match. */
export interface ApiKeyPage {
  readonly keys: readonly ApiKeyRecord[];
  readonly total: number;
}

/**
 * Where API keys live: MongoDB (`api_keys`, unique on the hash) or memory. Keys are found by the
 * hash of the key a caller presents; the key itself is never stored.
 */
export interface ApiKeyStore {
  insert(record: ApiKeyRecord): Promise<void>;
  /** The key with this hash, revoked or not; undefined when there is none. */
  findByHash(hash: string): Promise<ApiKeyRecord | undefined>;
  list(query: { owner?: string; limit: number; offset: number }): Promise<ApiKeyPage>;
  /** Marks the key revoked at `at`; false when it is unknown or already revoked. */
  revoke(keyId: string, at: Date): Promise<{ revoked: boolean; hash?: string }>;
  /** Which of these key ids are revoked (one query for all: the streams of a process ask together). */
  revokedAmong(keyIds: readonly string[]): Promise<ReadonlySet<string>>;
}

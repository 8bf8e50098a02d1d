import { LRUCache } from "lru-cache";
import { UnavailableError } from "../domain/errors.ts";

/** A cached value and when it was obtained from its source (Date.now()). */
export interface Obtained<V> {
  readonly value: V;
  readonly at: number;
}

export type CacheLookup = "hit" | "miss" | "stale";

export interface SwrCacheOptions<V> {
  /** Entries kept; the least recently used go first. */
  readonly max: number;
  /** A value is fresh this long. */
  readonly ttlMs: number;
  /** Oldest value served while loads fail; past it, callers get unavailable. */
  readonly maxStaleMs: number;
  /** Loads one key from the source (a batch loader, usually). Its errors' messages are shown. */
  readonly load: (key: string) => Promise<V>;
  /** What callers are told is unavailable, for example "the price of". */
  readonly what: string;
  /** Told of lookups by result (`count` of them at once). */
  readonly onLookup?: (lookup: CacheLookup, count: number) => void;
  readonly now?: () => number;
}

export interface SwrCache<V> {
  /**
   * The value of `key`: fresh, or stale (no older than `maxStaleMs`) while one load revalidates
   * it, or, when there is none, the value a load brings (one load per key, however many callers
   * wait). Throws UnavailableError when the source fails and nothing young enough is cached.
   * `fresh`: a value no older than `ttlMs` or none: a stale one is revalidated and waited for, and
   * when the load fails the call throws UnavailableError saying the value is stale.
   */
  get(key: string, options?: { readonly fresh?: boolean }): Promise<Obtained<V>>;
  /** The value of `key` if it is fresh, at once; undefined otherwise (then call `get`). */
  fresh(key: string): Obtained<V> | undefined;
  /** The values of `keys` if every one is fresh, at once; undefined otherwise (nothing counted). */
  freshAll(keys: readonly string[]): V[] | undefined;
  /** Puts a value obtained by other means (a search that returned it, say). */
  set(key: string, value: V): void;
}

/**
 * lru-cache's fetch does the hard parts: one load in flight per key (single-flight), stale values
 * served while a load revalidates them (stale-while-revalidate), and stale values kept when a
 * load fails (stale-if-error). What it does not do is bound how stale a served value may be; this
 * does, and it keeps the time each value was obtained so that callers can say how old it is.
 */
export function createSwrCache<V>(options: SwrCacheOptions<V>): SwrCache<V> {
  const { ttlMs, maxStaleMs, load, what } = options;
  const now = options.now ?? Date.now;
  const onLookup = options.onLookup ?? (() => {});
  /** Why the last load failed, for the unavailable message (the cache swallows load errors). */
  let lastFailure: unknown;
  const cache = new LRUCache<string, Obtained<V>>({
    max: options.max,
    ttl: options.ttlMs,
    // get() answers fresh values only (the warm path); fetch() is told to serve stale ones.
    allowStale: false,
    noDeleteOnStaleGet: true,
    allowStaleOnFetchRejection: true,
    ignoreFetchAbort: true,
    fetchMethod: async (key) => {
      try {
        const value = await load(key);
        return { value, at: now() };
      } catch (error) {
        lastFailure = error;
        throw error;
      }
    },
  });
  const failureReason = () => (lastFailure instanceof Error ? `: ${lastFailure.message}` : "");
  const unavailable = (key: string): UnavailableError =>
    new UnavailableError(`${what} ${key} is unavailable${failureReason()}`);
  const young = (entry: Obtained<V> | undefined): entry is Obtained<V> =>
    entry !== undefined && now() - entry.at <= maxStaleMs;

  return {
    async get(key, query) {
      if (query?.fresh === true) return getFresh(key);
      const status: LRUCache.Status<string, Obtained<V>> = {};
      const entry = await cache.fetch(key, { status, allowStale: true });
      onLookup(status.fetch === "hit" ? "hit" : status.returnedStale === true ? "stale" : "miss", 1);
      if (young(entry)) return entry;
      if (entry !== undefined) {
        // Too old to serve: wait for the load that revalidates it (already under way) instead.
        const fresh = await cache.fetch(key, { allowStale: false });
        if (young(fresh)) return fresh;
      }
      // No value (the load failed), or only one too old.
      throw unavailable(key);
    },
    fresh(key) {
      const entry = cache.get(key);
      if (entry !== undefined) onLookup("hit", 1);
      return entry;
    },
    freshAll(keys) {
      // The warm path of every call: no promise, one count for all the keys.
      const values = new Array<V>(keys.length);
      for (let i = 0; i < keys.length; i++) {
        const entry = cache.get(keys[i] as string);
        if (entry === undefined) return undefined;
        values[i] = entry.value;
      }
      onLookup("hit", keys.length);
      return values;
    },
    set(key, value) {
      cache.set(key, { value, at: now() });
    },
  };

  /** A value no older than `ttlMs`: a stale one is never answered, only refreshed and waited for. */
  async function getFresh(key: string): Promise<Obtained<V>> {
    const status: LRUCache.Status<string, Obtained<V>> = {};
    // Not allowed stale: a stale entry's revalidation (started now, or already under way) is
    // awaited. When it fails, lru-cache answers the stale value still (allowStaleOnFetchRejection),
    // which its age then tells apart from the load's.
    const entry = await cache.fetch(key, { status, allowStale: false });
    onLookup(status.fetch === "hit" ? "hit" : "miss", 1);
    if (entry !== undefined && now() - entry.at <= ttlMs) return entry;
    if (entry === undefined) throw unavailable(key);
    const seconds = (ms: number) => `${Number((ms / 1000).toFixed(1))} s`;
    throw new UnavailableError(
      `${what} ${key} is stale (obtained ${seconds(now() - entry.at)} ago, fresh for ${seconds(ttlMs)}) and could not be refreshed${failureReason()}`,
    );
  }
}

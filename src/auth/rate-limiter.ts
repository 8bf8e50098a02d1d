/** A token bucket's shape: `rate` tokens a second, holding at most `burst`. */
export interface RatePolicy {
  /** Its name in the RateLimit headers ("read", "write", "anonymous"). */
  readonly name: string;
  readonly rate: number;
  readonly burst: number;
}

/** The state of a bucket after a call took from it (or could not). */
export interface RateDecision {
  readonly allowed: boolean;
  /** Whole tokens left. */
  readonly remaining: number;
  /** Seconds until the next token, when refused (at least 1). */
  readonly retryAfterSeconds: number;
  /** Seconds until the bucket is full again. */
  readonly resetSeconds: number;
}

export interface RateLimiter {
  /** Takes a token from `key`'s bucket if it has one. */
  take(key: string, policy: RatePolicy): RateDecision;
  /** Whether `key`'s bucket has a token, without taking it. */
  has(key: string, policy: RatePolicy): boolean;
}

/**
 * Token buckets per key, in this process. The buckets are bounded: at most `maxBuckets`, the least
 * recently used going first (a full bucket is the same as no bucket, so forgetting an idle one
 * loses nothing), so callers inventing keys or addresses cannot grow memory without bound.
 */
export function createRateLimiter(options: { maxBuckets?: number; now?: () => number } = {}): RateLimiter {
  const maxBuckets = options.maxBuckets ?? 100_000;
  const now = options.now ?? (() => performance.now());
  const buckets = new Map<string, { tokens: number; at: number }>();

  function refilled(key: string, policy: RatePolicy): { tokens: number; at: number } {
    const t = now();
    let bucket = buckets.get(key);
    if (bucket === undefined) {
      if (buckets.size >= maxBuckets) buckets.delete(buckets.keys().next().value as string);
      bucket = { tokens: policy.burst, at: t };
    } else {
      buckets.delete(key);
      bucket.tokens = Math.min(policy.burst, bucket.tokens + ((t - bucket.at) / 1000) * policy.rate);
      bucket.at = t;
    }
    // Re-inserted: the map's order is the order of last use.
    buckets.set(key, bucket);
    return bucket;
  }

  return {
    take(key, policy) {
      const bucket = refilled(key, policy);
      const allowed = bucket.tokens >= 1;
      if (allowed) bucket.tokens -= 1;
      return {
        allowed,
        remaining: Math.floor(bucket.tokens),
        retryAfterSeconds: allowed ? 0 : Math.max(1, Math.ceil((1 - bucket.tokens) / policy.rate)),
        resetSeconds: Math.ceil((policy.burst - bucket.tokens) / policy.rate),
      };
    },
    has(key, policy) {
      return refilled(key, policy).tokens >= 1;
    },
  };
}

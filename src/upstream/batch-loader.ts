/**
 * Loads keys in batches: keys asked for within one turn of the event loop (the same I/O phase)
 * go out together, in requests of at most `maxBatch` keys, so 60 prices wanted at once cost two
 * upstream requests, not 60. Keys already waiting are not asked for twice. A failed request
 * fails the keys it carried, and only those.
 */
export function createBatchLoader<V>(options: {
  readonly maxBatch: number;
  /** One request for up to `maxBatch` keys: a value for every key, in any order. */
  readonly load: (keys: readonly string[]) => Promise<ReadonlyMap<string, V>>;
}): (key: string) => Promise<V> {
  const { maxBatch, load } = options;
  let pending = new Map<string, { resolve: (value: V) => void; reject: (error: unknown) => void }[]>();
  let scheduled = false;

  const flush = () => {
    scheduled = false;
    const batch = pending;
    pending = new Map();
    const keys = [...batch.keys()];
    for (let start = 0; start < keys.length; start += maxBatch) {
      const chunk = keys.slice(start, start + maxBatch);
      load(chunk).then(
        (values) => {
          for (const key of chunk) {
            const value = values.get(key);
            for (const waiter of batch.get(key) ?? []) {
              if (value === undefined) waiter.reject(new Error(`the batch load left out ${key}`));
              else waiter.resolve(value);
            }
          }
        },
        (error: unknown) => {
          for (const key of chunk) for (const waiter of batch.get(key) ?? []) waiter.reject(error);
        },
      );
    }
  };

  return (key) =>
    new Promise<V>((resolve, reject) => {
      let waiters = pending.get(key);
      if (waiters === undefined) {
        waiters = [];
        pending.set(key, waiters);
      }
      waiters.push({ resolve, reject });
      if (!scheduled) {
        scheduled = true;
        setImmediate(flush);
      }
    });
}

/**
 * A function's answers kept by key, at most `limit` of them: emptied when full (the keys are few
 * and hot, so a whole refill is cheap and needs no order kept). `forget` drops one answer whose
 * input changed.
 */
export function createBoundedMemo<V>(
  limit: number,
  compute: (key: string) => V,
): { get(key: string): V; forget(key: string): void } {
  const answers = new Map<string, V>();
  return {
    get(key) {
      if (answers.has(key)) return answers.get(key) as V;
      const value = compute(key);
      if (answers.size >= limit) answers.clear();
      answers.set(key, value);
      return value;
    },
    forget: (key) => void answers.delete(key),
  };
}

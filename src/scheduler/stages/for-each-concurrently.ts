/**
 * Agents handled at once by one poll, in each of its stages: a poll costs a few round trips rather
 * than a few per agent, without flooding the database with every agent's writes at once.
 */
export const POLL_PARALLELISM = 8;

/** Runs `work` on every item, at most `parallelism` at a time. */
export async function forEachConcurrently<T>(
  items: readonly T[],
  parallelism: number,
  work: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < items.length) await work(items[next++] as T);
  };
  await Promise.all(Array.from({ length: Math.min(parallelism, items.length) }, lane));
}

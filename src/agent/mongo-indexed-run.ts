/**
 * How a MongoDB adapter runs an operation: under the store's guard (connected, bounded in time,
 * an unreachable database mapped to UnavailableError), after its indexes were made once. Making
 * them is retried by the next operation when it failed (the database was away).
 */
export function indexedRun(
  guard: <T>(op: () => Promise<T>) => Promise<T>,
  createIndexes: () => Promise<void>,
): <T>(op: () => Promise<T>) => Promise<T> {
  let indexes: Promise<void> | undefined;
  const ensureIndexes = (): Promise<void> => {
    indexes ??= createIndexes().catch((err: unknown) => {
      indexes = undefined;
      throw err;
    });
    return indexes;
  };
  return (op) =>
    guard(async () => {
      await ensureIndexes();
      return op();
    });
}

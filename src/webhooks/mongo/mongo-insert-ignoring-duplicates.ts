import type { Collection } from "mongodb";
import { DUPLICATE_KEY } from "../../agent/mongo-errors.ts";

/** Inserts documents, passing over those whose `_id` exists: the ids of those inserted. */
export async function insertIgnoringDuplicates<T extends { _id: string }>(
  collection: Collection<T>,
  docs: readonly T[],
): Promise<Set<string>> {
  const ids = docs.map((d) => d._id);
  try {
    // biome-ignore lint/suspicious/noExplicitAny: the driver's OptionalUnlessRequiredId cannot see through T.
    await collection.insertMany(docs as any[], { ordered: false });
    return new Set(ids);
  } catch (err) {
    const writeErrors = (err as { writeErrors?: unknown }).writeErrors;
    const errors = (
      Array.isArray(writeErrors) ? writeErrors : writeErrors === undefined ? [] : [writeErrors]
    ) as {
      code?: number;
      index?: number;
    }[];
    if (errors.length === 0 || errors.some((e) => e.code !== DUPLICATE_KEY)) throw err;
    const failed = new Set(errors.map((e) => e.index));
    return new Set(ids.filter((_, i) => !failed.has(i)));
  }
}

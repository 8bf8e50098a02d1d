/** Inserts that decide races: a duplicate `_id` is an answer ("there already"), not an error. */
import { type Collection, MongoBulkWriteError, type WriteError } from "mongodb";
import { DUPLICATE_KEY, isDuplicateKey } from "../../agent/mongo-errors.ts";

/** Inserts every document not there yet (in one command); false when one was there already. */
export async function insertAll<T extends { _id: string }>(
  collection: Collection<T>,
  docs: T[],
): Promise<boolean> {
  if (docs.length === 0) return true;
  try {
    // biome-ignore lint/suspicious/noExplicitAny: the driver's OptionalUnlessRequiredId cannot see through T.
    await collection.insertMany(docs as any, { ordered: false });
    return true;
  } catch (err) {
    if (err instanceof MongoBulkWriteError && writeErrorsOf(err).every((e) => e.code === DUPLICATE_KEY)) {
      return false;
    }
    throw err;
  }
}

export async function insertOnce<T extends { _id: string }>(
  collection: Collection<T>,
  doc: T,
): Promise<boolean> {
  try {
    // biome-ignore lint/suspicious/noExplicitAny: the driver's OptionalUnlessRequiredId cannot see through T.
    await collection.insertOne(doc as any);
    return true;
  } catch (err) {
    if (isDuplicateKey(err)) return false;
    throw err;
  }
}

/** The write errors of a bulk write, as a list (the driver gives one or several). */
export function writeErrorsOf(err: MongoBulkWriteError): readonly WriteError[] {
  const errors = err.writeErrors;
  return Array.isArray(errors) ? errors : [errors as WriteError];
}

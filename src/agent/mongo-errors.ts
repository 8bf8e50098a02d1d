import { MongoServerError } from "mongodb";

export const DUPLICATE_KEY = 11000;

/**
 * True when an insert lost a race on a unique key: the one signal every race in the MongoDB
 * adapters is decided by (FerretDB's conditional updates are not atomic; its unique inserts are).
 */
export function isDuplicateKey(err: unknown): boolean {
  return err instanceof MongoServerError && err.code === DUPLICATE_KEY;
}

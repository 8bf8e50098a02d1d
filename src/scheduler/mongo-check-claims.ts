import { type Collection, type Db, MongoBulkWriteError, type WriteError } from "mongodb";
import { DUPLICATE_KEY } from "../agent/mongo-errors.ts";
import { CHECK_CLAIM_TTL_MS, type CheckClaims } from "./check-claims.ts";

interface CheckClaimDoc {
  /** checkKeyOf(agentId, check). */
  _id: string;
  at: Date;
}

/**
 * Check claims in MongoDB (or FerretDB): collection `agent_check_claims`, one document per
 * claimed (agent, check), inserted unordered in one command per poll; a duplicate `_id` is a
 * check another replica claimed first. Old claims are deleted by the replicas themselves, at most
 * every PRUNE_EVERY_MS (FerretDB has no TTL indexes, and reads the collection for the delete).
 */
export function createMongoCheckClaims(options: {
  readonly db: Db;
  readonly guard: <T>(op: () => Promise<T>) => Promise<T>;
  readonly collectionPrefix?: string;
}): CheckClaims {
  const claims: Collection<CheckClaimDoc> = options.db.collection(
    `${options.collectionPrefix ?? ""}agent_check_claims`,
    { writeConcern: { w: "majority" } },
  );
  let nextPruneAt = 0;
  return {
    claim: (keys, now) =>
      options.guard(async () => {
        if (keys.length === 0) return new Set();
        if (now.getTime() >= nextPruneAt) {
          nextPruneAt = now.getTime() + PRUNE_EVERY_MS;
          await claims.deleteMany({ at: { $lt: new Date(now.getTime() - CHECK_CLAIM_TTL_MS) } });
        }
        const lost = new Set<number>();
        try {
          await claims.insertMany(
            keys.map((key) => ({ _id: key, at: now })),
            { ordered: false },
          );
        } catch (err) {
          if (!(err instanceof MongoBulkWriteError)) throw err;
          const errors = Array.isArray(err.writeErrors) ? err.writeErrors : [err.writeErrors as WriteError];
          if (errors.some((e) => e.code !== DUPLICATE_KEY)) throw err;
          for (const e of errors) lost.add(e.index);
        }
        return new Set(keys.filter((_, i) => !lost.has(i)));
      }),
  };
}

/** How often a replica deletes claims older than CHECK_CLAIM_TTL_MS. */
const PRUNE_EVERY_MS = 60_000;

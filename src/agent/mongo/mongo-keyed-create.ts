/**
 * A create with an idempotency key: the key and the agent are decided together. The key's history
 * is a series of generations, each an immutable document whose `_id` is JSON [owner, key, gen]
 * and which carries the whole agent it stands for, and the request's fingerprint. Only inserts
 * decide races (FerretDB's conditional updates are not atomic).
 *
 * - No live generation: insert generation n + 1 carrying our agent FIRST, then the agent. Of
 *   concurrent creates, the unique `_id` lets one insert it; the others read again. If the agent
 *   insert then fails (the database went down), the key already names it: a retry completes it.
 * - A live generation with another fingerprint: the key was used for a different request
 *   (FailedPreconditionError), as the IETF Idempotency-Key draft and Stripe answer.
 * - A live generation with our fingerprint: its agent is returned; created (materialised) from
 *   the key document if its insert never happened, unless the owner deleted it since (a
 *   tombstone says so), in which case the original answer is replayed and nothing comes back.
 */
import type { Collection } from "mongodb";
import { FailedPreconditionError, NotFoundError } from "../../domain/errors.ts";
import { type AgentRecord, type CreateResult, copyAgentRecord, IDEMPOTENCY_TTL_MS } from "../agent-store.ts";
import { isDuplicateKey } from "../mongo-errors.ts";
import { type AgentDoc, fromDoc, type KeyDoc, type TombstoneDoc, toDoc } from "./mongo-agent-docs.ts";

/** Bound on the read/insert loop of one keyed create; only reached under pathological churn. */
const MAX_KEY_ATTEMPTS = 16;
/** Generations of one idempotency key looked at; a key reused daily reaches it after 2.7 years. */
const MAX_GENERATIONS = 1000;

export interface MongoKeyedCreateOptions {
  readonly agents: Collection<AgentDoc>;
  readonly keys: Collection<KeyDoc>;
  readonly tombstones: Collection<TombstoneDoc>;
  /** The clock for idempotency-key expiry. */
  readonly now: () => Date;
}

/** Creates `record` under an idempotency key (see the header); the key's fingerprint is the request's. */
export type MongoKeyedCreate = (
  record: AgentRecord,
  key: string,
  fingerprint: string,
) => Promise<CreateResult>;

export function createMongoKeyedCreate(options: MongoKeyedCreateOptions): MongoKeyedCreate {
  const { agents, keys, tombstones, now } = options;
  /**
   * The newest generation of a key, found by `_id` from generation 0 up: point lookups, which
   * every server answers from its `_id` index. (A query sorted by generation made FerretDB scan the
   * whole collection on every keyed create, so creates slowed down as keys accumulated.) Earlier
   * generations are kept for this walk; there is one per 24 hours a key is reused at most.
   */
  async function newestGeneration(owner: string, key: string): Promise<KeyDoc | null> {
    let newest: KeyDoc | null = null;
    for (let gen = 0; gen < MAX_GENERATIONS; gen++) {
      const doc = await keys.findOne({ _id: JSON.stringify([owner, key, gen]) });
      if (doc === null) return newest;
      newest = doc;
    }
    return newest;
  }

  async function createWithKey(record: AgentRecord, key: string, fingerprint: string): Promise<CreateResult> {
    const { owner } = record;
    for (let attempt = 0; attempt < MAX_KEY_ATTEMPTS; attempt++) {
      const nowDate = now();
      const latest = await newestGeneration(owner, key);
      if (latest === null || latest.expiresAt.getTime() <= nowDate.getTime()) {
        const gen = latest === null ? 0 : latest.gen + 1;
        try {
          await keys.insertOne({
            _id: JSON.stringify([owner, key, gen]),
            owner,
            key,
            gen,
            agentId: record.agentId,
            fingerprint,
            record: toDoc(record),
            expiresAt: new Date(nowDate.getTime() + IDEMPOTENCY_TTL_MS),
          });
        } catch (err) {
          if (isDuplicateKey(err)) continue; // a concurrent repeat won; read what it stored
          throw err;
        }
        try {
          await agents.insertOne({ ...toDoc(record), idempotencyKeyGen: [key, gen] });
        } catch (err) {
          // A concurrent repeat found the key before this insert and completed the agent itself.
          if (!isDuplicateKey(err)) throw err;
        }
        return { agent: copyAgentRecord(record), created: true };
      }
      if (latest.fingerprint !== undefined && latest.fingerprint !== fingerprint) {
        throw new FailedPreconditionError(
          "idempotency-key was first used with a different request. Use a new key for a new request",
        );
      }
      const existing = await agents.findOne({ _id: latest.agentId });
      if (existing !== null && existing.owner === owner) return { agent: fromDoc(existing), created: false };
      const original = latest.record === undefined ? undefined : fromDoc(latest.record);
      if (original === undefined || (await tombstones.findOne({ _id: latest.agentId })) !== null) {
        // Deleted by its owner since: replay the first answer, never bring it back.
        if (original === undefined) throw new NotFoundError(`agent ${latest.agentId} was deleted`);
        return { agent: original, created: false };
      }
      // The first create stored the key but not the agent (the database went away): complete it.
      try {
        await agents.insertOne({ ...latest.record, idempotencyKeyGen: [key, latest.gen] } as AgentDoc);
      } catch (err) {
        if (isDuplicateKey(err)) continue; // completed by a concurrent repeat
        throw err;
      }
      if ((await tombstones.findOne({ _id: latest.agentId })) !== null) {
        // A delete raced the completion; it wins.
        await agents.deleteOne({ _id: latest.agentId });
        return { agent: original, created: false };
      }
      return { agent: original, created: false };
    }
    throw new Error("idempotency key kept changing; gave up settling it");
  }

  return createWithKey;
}

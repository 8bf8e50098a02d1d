import type { Collection, Db } from "mongodb";
import { isDuplicateKey } from "../agent/mongo-errors.ts";
import { indexedRun } from "../agent/mongo-indexed-run.ts";
import { type ApiKeyRecord, isScope } from "./api-key.ts";
import type { ApiKeyStore } from "./api-key-store.ts";

interface ApiKeyDoc {
  /** The key id. */
  _id: string;
  hash: string;
  owner: string;
  scopes: string[];
  createdAt: Date;
  revokedAt?: Date;
  maxAgents?: number;
  maxPending?: number;
}

/** Key ids one query of revokedAmong asks about, at most. */
const REVOKED_QUERY_IDS = 1_000;

export interface MongoApiKeyStoreOptions {
  readonly db: Db;
  /**
   * Runs one store operation connected and bounded in time, mapping an unreachable database to
   * the domain's UnavailableError (the agent store's guard, so every store fails alike).
   */
  readonly guard: <T>(op: () => Promise<T>) => Promise<T>;
  /** Server-side bound on the queries that can scan (lists, counts). */
  readonly maxTimeMS?: number;
}

/**
 * API keys in MongoDB (or FerretDB): collection `api_keys`, one document per key under its id,
 * with a unique index on the hash, by which every authenticated call finds its key.
 */
export function createMongoApiKeyStore(options: MongoApiKeyStoreOptions): ApiKeyStore {
  const { db, guard } = options;
  const keys: Collection<ApiKeyDoc> = db.collection<ApiKeyDoc>("api_keys");
  const bounded = options.maxTimeMS === undefined ? {} : { maxTimeMS: options.maxTimeMS };
  const run = indexedRun(guard, async () => {
    await keys.createIndex({ hash: 1 }, { unique: true, name: "hash_unique" });
    await keys.createIndex({ owner: 1, createdAt: -1 }, { name: "owner_createdAt" });
  });

  return {
    insert(record) {
      return run(async () => {
        try {
          await keys.insertOne(
            {
              _id: record.keyId,
              hash: record.hash,
              owner: record.owner,
              scopes: [...record.scopes],
              createdAt: record.createdAt,
              ...(record.maxAgents === undefined ? {} : { maxAgents: record.maxAgents }),
              ...(record.maxPending === undefined ? {} : { maxPending: record.maxPending }),
            },
            { writeConcern: { w: "majority" } },
          );
        } catch (error) {
          if (isDuplicateKey(error)) throw new Error("duplicate API key");
          throw error;
        }
      });
    },
    findByHash(hash) {
      return run(async () => {
        const doc = await keys.findOne({ hash });
        return doc === null ? undefined : recordOf(doc);
      });
    },
    list({ owner, limit, offset }) {
      return run(async () => {
        const filter = owner === undefined ? {} : { owner };
        const [docs, total] = await Promise.all([
          keys.find(filter, bounded).sort({ createdAt: -1, _id: 1 }).skip(offset).limit(limit).toArray(),
          keys.countDocuments(filter, bounded),
        ]);
        return { keys: docs.map(recordOf), total };
      });
    },
    revoke(keyId, at) {
      return run(async () => {
        const before = await keys.findOneAndUpdate(
          { _id: keyId, revokedAt: { $exists: false } },
          { $set: { revokedAt: at } },
          { writeConcern: { w: "majority" } },
        );
        return before === null ? { revoked: false } : { revoked: true, hash: before.hash };
      });
    },
    revokedAmong(keyIds) {
      return run(async () => {
        const revoked = new Set<string>();
        // In pieces, so that a process with many keys streaming sends no unbounded query.
        for (let i = 0; i < keyIds.length; i += REVOKED_QUERY_IDS) {
          const docs = await keys
            .find(
              { _id: { $in: keyIds.slice(i, i + REVOKED_QUERY_IDS) }, revokedAt: { $exists: true } },
              { projection: { _id: 1 }, ...bounded },
            )
            .toArray();
          for (const doc of docs) revoked.add(doc._id);
        }
        return revoked;
      });
    },
  };
}

function recordOf(doc: ApiKeyDoc): ApiKeyRecord {
  return {
    keyId: doc._id,
    hash: doc.hash,
    owner: doc.owner,
    scopes: doc.scopes.filter(isScope),
    createdAt: doc.createdAt,
    ...(doc.revokedAt === undefined ? {} : { revokedAt: doc.revokedAt }),
    ...(doc.maxAgents === undefined ? {} : { maxAgents: doc.maxAgents }),
    ...(doc.maxPending === undefined ? {} : { maxPending: doc.maxPending }),
  };
}

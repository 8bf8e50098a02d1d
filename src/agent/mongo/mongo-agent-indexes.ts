/** The agent store's indexes, each named after the query it serves. */
import {
  type Collection,
  type CreateIndexesOptions,
  type Document,
  type IndexSpecification,
  MongoServerError,
} from "mongodb";
import type { AgentDoc, KeyDoc } from "./mongo-agent-docs.ts";

/** "Index already exists with a different name": the keys are indexed, which is all we need. */
const INDEX_OPTIONS_CONFLICT = 85;
/** FerretDB v1 answers options it lacks (e.g. `expireAfterSeconds`) with NotImplemented. */
const NOT_IMPLEMENTED = 238;

export async function createAgentIndexes(
  agents: Collection<AgentDoc>,
  keys: Collection<KeyDoc>,
  versions: Collection<Document>,
): Promise<void> {
  // list(): the owner's agents, optionally by type and status, newest first.
  await createIndex(
    agents,
    { owner: 1, type: 1, status: 1, createdAt: -1, _id: -1 },
    "owner_type_status_createdAt_id",
  );
  // The scheduler: due agents by status.
  await createIndex(agents, { status: 1, nextRunAt: 1 }, "status_nextRunAt");
  // The scheduler: pending agents, oldest first.
  await createIndex(agents, { status: 1, createdAt: 1, _id: 1 }, "status_createdAt_id");
  // Kinds that watch: their open agents across owners (AgentStore.watching).
  await createIndex(agents, { type: 1, status: 1, _id: 1 }, "type_status_id");
  // Version claims of one agent (housekeeping of old ones, and a deleted agent's).
  await createIndex(versions, { agentId: 1, version: 1 }, "agentId_version");
  // createWithKey(): the newest generation of a key.
  await createIndex(keys, { owner: 1, key: 1, gen: -1 }, "owner_key_gen");
  try {
    // Removes expired key generations in the background. Reads check expiresAt themselves (TTL
    // deletion is lazy), so this index is housekeeping only.
    await createIndex(keys, { expiresAt: 1 }, "expiresAt_ttl", { expireAfterSeconds: 0 });
  } catch (err) {
    // FerretDB v1 rejects `expireAfterSeconds` (NotImplemented): an expired key's newest
    // generation then stays until a repeat of the same key takes it over.
    if (!(err instanceof MongoServerError && err.code === NOT_IMPLEMENTED)) throw err;
  }
}

/** createIndex, content when an index on the same keys already exists under another name. */
async function createIndex<T extends Document>(
  collection: Collection<T>,
  key: IndexSpecification,
  name: string,
  options: CreateIndexesOptions = {},
): Promise<void> {
  try {
    await collection.createIndex(key, { ...options, name });
  } catch (err) {
    if (!(err instanceof MongoServerError && err.code === INDEX_OPTIONS_CONFLICT)) throw err;
  }
}

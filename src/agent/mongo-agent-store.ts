/**
 * The MongoDB AgentStore. Runs against MongoDB and against FerretDB v1 (the test server), so it uses
 * nothing FerretDB v1 lacks: no transactions, no partial or TTL indexes it relies on.
 *
 * Availability: creating the store does not touch the database. The driver connects on the first
 * operation and reconnects by itself after the server comes back; the store caches nothing that
 * could outlive an outage (index creation is retried until it has succeeded once). Errors meaning
 * "the server cannot be reached" become UnavailableError; anything else propagates unchanged.
 *
 * Idempotency keys live in their own collection, as generations whose unique `_id`s arbitrate
 * concurrent repeats; see mongo/mongo-keyed-create.ts.
 */
import {
  type Collection,
  type Db,
  type Document,
  MongoClient,
  type MongoClientOptions,
  type WriteConcernSettings,
} from "mongodb";
import {
  type AgentRecord,
  type AgentStatus,
  type AgentStore,
  copyAgentRecord,
  type NewAgent,
} from "./agent-store.ts";
import {
  type AgentDoc,
  fieldChangeOf,
  fromDoc,
  type KeyDoc,
  type TallyDoc,
  type TombstoneDoc,
  toDoc,
} from "./mongo/mongo-agent-docs.ts";
import { createAgentIndexes } from "./mongo/mongo-agent-indexes.ts";
import { createMongoAgentReads } from "./mongo/mongo-agent-reads.ts";
import { createMongoAgentTallies } from "./mongo/mongo-agent-tallies.ts";
import { createMongoGuard } from "./mongo/mongo-guard.ts";
import { createMongoKeyedCreate } from "./mongo/mongo-keyed-create.ts";
import { databaseInUri } from "./mongo/mongo-uri.ts";
import { isDuplicateKey } from "./mongo-errors.ts";
import { dropVersions, versionedUpdate } from "./mongo-versioned-update.ts";

export { isUnavailableError } from "./mongo/mongo-unavailable.ts";
export { databaseInUri };

export interface MongoAgentStoreOptions {
  readonly uri: string;
  /** Defaults to the database named in the URI, else "token_agent_service". */
  readonly dbName?: string;
  readonly maxPoolSize?: number;
  /** Defaults to 2000 ms so calls fail fast while the database is down. */
  readonly serverSelectionTimeoutMS?: number;
  readonly connectTimeoutMS?: number;
  readonly socketTimeoutMS?: number;
  /**
   * Upper bound on one store call, retries and reconnects included; past it the call fails with
   * UnavailableError (the driver's own attempt may still finish later). Defaults to 5000 ms.
   */
  readonly operationTimeoutMS?: number;
  /** The clock for idempotency-key expiry; tests move it. */
  readonly now?: () => Date;
  /** Prepended to the collection names (`agents`, `agent_idempotency_keys`). */
  readonly collectionPrefix?: string;
  /** Emit the driver's command events on `client` (tests check what reaches the server). */
  readonly monitorCommands?: boolean;
}

export type MongoAgentStore = AgentStore & {
  readonly client: MongoClient;
  readonly db: Db;
  /**
   * Runs an operation the way the store runs its own (connected, bounded in time, unavailability
   * mapped), so stores that share this database fail alike.
   */
  guard<T>(op: () => Promise<T>): Promise<T>;
};

const DEFAULT_DB_NAME = "token_agent_service";
const DEFAULT_SERVER_SELECTION_TIMEOUT_MS = 2000;
const DEFAULT_OPERATION_TIMEOUT_MS = 5000;
const UNAVAILABLE_MESSAGE = "agent store is unavailable";

const WRITE_CONCERN: WriteConcernSettings = { w: "majority" };

export async function createMongoAgentStore(options: MongoAgentStoreOptions): Promise<MongoAgentStore> {
  const clientOptions: MongoClientOptions = {
    appName: "token-agent-service",
    serverSelectionTimeoutMS: options.serverSelectionTimeoutMS ?? DEFAULT_SERVER_SELECTION_TIMEOUT_MS,
  };
  if (options.maxPoolSize !== undefined) clientOptions.maxPoolSize = options.maxPoolSize;
  if (options.connectTimeoutMS !== undefined) clientOptions.connectTimeoutMS = options.connectTimeoutMS;
  if (options.socketTimeoutMS !== undefined) clientOptions.socketTimeoutMS = options.socketTimeoutMS;
  if (options.monitorCommands === true) clientOptions.monitorCommands = true;
  // Constructing the client parses the URI but opens no connection: the store starts with the
  // database down, and the driver connects on the first operation.
  const client = new MongoClient(options.uri, clientOptions);

  const now = options.now ?? (() => new Date());
  const db: Db = client.db(options.dbName ?? databaseInUri(options.uri) ?? DEFAULT_DB_NAME);
  const prefix = options.collectionPrefix ?? "";
  const agents: Collection<AgentDoc> = db.collection<AgentDoc>(`${prefix}agents`, {
    writeConcern: WRITE_CONCERN,
  });
  const keys: Collection<KeyDoc> = db.collection<KeyDoc>(`${prefix}agent_idempotency_keys`, {
    writeConcern: WRITE_CONCERN,
  });
  const versions: Collection<Document> = db.collection(`${prefix}agent_versions`, {
    writeConcern: WRITE_CONCERN,
  });
  const tombstones: Collection<TombstoneDoc> = db.collection<TombstoneDoc>(`${prefix}agent_tombstones`, {
    writeConcern: WRITE_CONCERN,
  });
  // Each owner's agents counted as the caps count them; see mongo-agent-tallies.ts.
  const tallies: Collection<TallyDoc> = db.collection<TallyDoc>(`${prefix}agent_owner_tallies`, {
    writeConcern: WRITE_CONCERN,
  });

  /**
   * The documents (with their versions) that `due` and `pending` records were made from, so that an update the
   * scheduler makes right after can claim the next version without reading the agent again.
   */
  const handedOut = new WeakMap<AgentRecord, AgentDoc>();
  const handOut = (doc: AgentDoc): AgentRecord => {
    const record = fromDoc(doc);
    handedOut.set(record, doc);
    return record;
  };

  /** Pending or done index creation; reset on failure so the next call tries again. */
  let indexes: Promise<void> | undefined;
  function ensureIndexes(): Promise<void> {
    indexes ??= createAgentIndexes(agents, keys, versions).catch((err: unknown) => {
      indexes = undefined;
      throw err;
    });
    return indexes;
  }

  const operationTimeoutMS = options.operationTimeoutMS ?? DEFAULT_OPERATION_TIMEOUT_MS;
  /**
   * Server-side bound for the queries that can scan (lists, counts, due agents, key lookups): a
   * call that gives up after operationTimeoutMS must not leave its query running on the database.
   */
  const bounded = { maxTimeMS: operationTimeoutMS };
  const { retally, countOf } = createMongoAgentTallies({ tallies, agents, bounded });
  const reads = createMongoAgentReads({ agents, bounded, handOut, run });
  const createWithKey = createMongoKeyedCreate({ agents, keys, tombstones, now });
  const { guard: guarded, close } = createMongoGuard({
    client,
    operationTimeoutMS,
    unavailableMessage: UNAVAILABLE_MESSAGE,
  });

  /** Runs `op` connected and after the indexes exist. */
  function run<T>(op: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    return guarded(async () => {
      await ensureIndexes();
      return op();
    }, signal);
  }

  return {
    client,
    db,
    guard: guarded,
    create: ({ record, idempotencyKey, fingerprint }: NewAgent) =>
      run(async () => {
        if (idempotencyKey === undefined) {
          await agents.insertOne(toDoc(record));
          await retally(record.owner, undefined, record.status);
          return { agent: copyAgentRecord(record), created: true };
        }
        const result = await createWithKey(record, idempotencyKey, fingerprint ?? "");
        if (result.created) await retally(record.owner, undefined, record.status);
        return result;
      }),
    countOf: (owner) => run(() => countOf(owner)),
    delete: (owner, agentId) =>
      run(async () => {
        const doc = await agents.findOne({ _id: agentId }, { projection: { owner: 1, status: 1 } });
        if (doc === null || doc.owner !== owner) return false;
        // A deleted agent leaves a tombstone first: a late repeat of its create (under an
        // idempotency key) replays the first answer instead of bringing the agent back, and the
        // event repair learns of a deletion whose event was never appended (its owner and time).
        await tombstones.insertOne({ _id: agentId, owner, deletedAt: now() }).catch((err: unknown) => {
          if (!isDuplicateKey(err)) throw err;
        });
        const result = await agents.deleteOne({ _id: agentId });
        if (result.deletedCount === 1) {
          await retally(owner, doc.status, undefined);
          await dropVersions(versions, agentId).catch(() => {});
        }
        return result.deletedCount === 1;
      }),
    ...reads,
    update: (owner, agentId, change, updateOptions) =>
      run(async () => {
        const known = updateOptions?.known === undefined ? undefined : handedOut.get(updateOptions.known);
        /** The status the change that was applied saw (the last call of `change` is the one). */
        let before: AgentStatus | undefined;
        let changed = false;
        const doc = await versionedUpdate<AgentDoc>({
          docs: agents,
          versions,
          id: agentId,
          accept: (current) => current.owner === owner,
          ...(known === undefined ? {} : { known }),
          change: (current) => {
            const patch = change(fromDoc(current));
            before = current.status;
            changed = patch !== undefined;
            return patch === undefined ? undefined : fieldChangeOf(patch);
          },
          now,
          rollForwardAfterMs: Math.max(2 * operationTimeoutMS, 1_000),
        });
        if (doc !== undefined && changed && before !== doc.status) await retally(owner, before, doc.status);
        return doc === undefined ? undefined : fromDoc(doc);
      }),
    ping: () =>
      guarded(async () => {
        await db.command({ ping: 1 });
      }),
    close,
  };
}

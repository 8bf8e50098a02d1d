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
 * concurrent repeats; see `createWithKey`.
 */
import {
  type Collection,
  type CreateIndexesOptions,
  type Db,
  type Document,
  type IndexSpecification,
  MongoClient,
  MongoClientClosedError,
  type MongoClientOptions,
  MongoError,
  MongoErrorLabel,
  MongoNetworkError,
  MongoNotConnectedError,
  MongoServerClosedError,
  MongoServerError,
  MongoServerSelectionError,
  MongoTopologyClosedError,
  type WriteConcernSettings,
} from "mongodb";
import { FailedPreconditionError, NotFoundError, UnavailableError } from "../domain/errors.ts";
import {
  type AgentListPage,
  type AgentListQuery,
  type AgentPatch,
  type AgentRecord,
  type AgentStatus,
  type AgentStore,
  type AgentType,
  type CreateResult,
  copyAgentRecord,
  IDEMPOTENCY_TTL_MS,
  type JsonObject,
  type NewAgent,
} from "./agent-store.ts";
import { isDuplicateKey } from "./mongo-errors.ts";
import { dropVersions, type FieldChange, versionedUpdate } from "./mongo-versioned-update.ts";

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
/** "Index already exists with a different name": the keys are indexed, which is all we need. */
const INDEX_OPTIONS_CONFLICT = 85;
/** FerretDB v1 answers options it lacks (e.g. `expireAfterSeconds`) with NotImplemented. */
const NOT_IMPLEMENTED = 238;
/** Bound on the read/insert loop of one keyed create; only reached under pathological churn. */
const MAX_KEY_ATTEMPTS = 16;
/** Generations of one idempotency key looked at; a key reused daily reaches it after 2.7 years. */
const MAX_GENERATIONS = 1000;

const WRITE_CONCERN: WriteConcernSettings = { w: "majority" };

interface AgentDoc {
  _id: string;
  owner: string;
  type: AgentType;
  status: AgentStatus;
  config: JsonObject;
  createdAt: Date;
  lastRunAt?: Date;
  nextRunAt?: Date;
  failureReason?: string;
  consecutiveFailures?: number;
  decimals?: number;
  /** Lifecycle changes so far (see mongo-versioned-update.ts); absent means 0. */
  version?: number;
  /** [key, generation] of the idempotency key it was created under, if any. */
  idempotencyKeyGen?: [string, number];
}

/** An owner's agents as the caps count them; see `tallies`. */
interface TallyDoc {
  _id: string;
  held: number;
  pending: number;
  /** Set once the owner's agents were counted: until then the changes alone say nothing. */
  counted?: boolean;
}

/** The deletion of an agent made under an idempotency key; see `createWithKey`. */
interface TombstoneDoc {
  _id: string;
  owner: string;
  deletedAt: Date;
}

/** One generation of an idempotency key; see `createWithKey`. Never updated once inserted. */
interface KeyDoc {
  /** JSON.stringify([owner, key, gen]): unambiguous, so ("a:b","c") and ("a","b:c") never collide. */
  _id: string;
  owner: string;
  key: string;
  /** 0 for the key's first use, +1 for each take-over (after expiry, or its agent was deleted). */
  gen: number;
  agentId: string;
  /** The generation returns its agent while now < expiresAt (its first use + IDEMPOTENCY_TTL_MS). */
  expiresAt: Date;
  /** The request it was first used with (absent on keys written before fingerprints existed). */
  fingerprint?: string;
  /** The agent as first created (absent on keys written before keys carried it). */
  record?: AgentDoc;
}

/**
 * Server error codes meaning the server is shutting down, stepping down or unreachable behind a
 * router: the retryable-read codes of the driver's (internal) MONGODB_ERROR_CODES.
 */
const UNAVAILABLE_CODES: ReadonlySet<number> = new Set([
  6, // HostUnreachable
  7, // HostNotFound
  89, // NetworkTimeout
  91, // ShutdownInProgress
  134, // ReadConcernMajorityNotAvailableYet
  189, // PrimarySteppedDown
  262, // ExceededTimeLimit
  9001, // SocketException
  10107, // NotWritablePrimary
  11600, // InterruptedAtShutdown
  11602, // InterruptedDueToReplStateChange
  13435, // NotPrimaryNoSecondaryOk
  13436, // NotPrimaryOrSecondary
]);

/** Labels the driver or server put on errors that a retry against a recovered server may fix. */
const UNAVAILABLE_LABELS: readonly string[] = [
  MongoErrorLabel.RetryableError,
  MongoErrorLabel.RetryableWriteError,
  MongoErrorLabel.ResetPool,
  MongoErrorLabel.PoolRequestedRetry,
  MongoErrorLabel.SystemOverloadedError,
];

/** Driver errors not exported as classes, matched by name. */
const UNAVAILABLE_NAMES: ReadonlySet<string> = new Set([
  "MongoPoolClosedError",
  "MongoPoolClearedError",
  "PoolClearedOnNetworkError",
  "MongoWaitQueueTimeoutError",
]);

/**
 * Node socket errors. mongodb 7.9 lets some escape unwrapped: a command written to a connection the
 * server has just closed rejects with Node's own EPIPE "This socket has been ended by the other
 * party" instead of a MongoNetworkError.
 */
const SOCKET_ERROR_CODES: ReadonlySet<string> = new Set([
  "EPIPE",
  "ECONNRESET",
  "ECONNREFUSED",
  "ECONNABORTED",
  "ETIMEDOUT",
  "ENOTCONN",
  "EHOSTUNREACH",
  "EHOSTDOWN",
  "ENETUNREACH",
  "ENETDOWN",
  "EAI_AGAIN",
  "ERR_SOCKET_CLOSED",
  "ERR_STREAM_DESTROYED",
  "ERR_STREAM_WRITE_AFTER_END",
]);

/** True when `err` means the database cannot be reached right now (or the connection dropped). */
export function isUnavailableError(err: unknown): boolean {
  if (!(err instanceof MongoError)) {
    const code = err instanceof Error ? (err as NodeJS.ErrnoException).code : undefined;
    return typeof code === "string" && SOCKET_ERROR_CODES.has(code);
  }
  if (
    err instanceof MongoServerSelectionError ||
    err instanceof MongoNetworkError || // includes MongoNetworkTimeoutError and pool-cleared errors
    err instanceof MongoTopologyClosedError ||
    err instanceof MongoNotConnectedError ||
    err instanceof MongoServerClosedError ||
    err instanceof MongoClientClosedError
  ) {
    return true;
  }
  if (UNAVAILABLE_NAMES.has(err.name)) return true;
  if (UNAVAILABLE_LABELS.some((label) => err.hasErrorLabel(label))) return true;
  return typeof err.code === "number" && UNAVAILABLE_CODES.has(err.code);
}

function mapError(err: unknown): unknown {
  return isUnavailableError(err) ? new UnavailableError(UNAVAILABLE_MESSAGE, { cause: err }) : err;
}

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
  /**
   * Each owner's agents counted as the caps count them (held: pending, active and paused;
   * pending), under the owner as `_id`: a count is a point read, which FerretDB answers from its
   * `_id` index, where counting the agents themselves reads every agent (seconds at 10,000).
   * Moved by $inc after each create, status change and delete made through this store. A crash
   * between an agent's write and its tally's leaves the tally off by that one change: caps are
   * limits against floods, not balances.
   */
  const tallies: Collection<TallyDoc> = db.collection<TallyDoc>(`${prefix}agent_owner_tallies`, {
    writeConcern: WRITE_CONCERN,
  });
  const weightOf = (status: AgentStatus | undefined) => ({
    held: status === undefined || status === "failed" ? 0 : 1,
    pending: status === "pending" ? 1 : 0,
  });
  /**
   * Tally changes of one owner in flight here, one after another: FerretDB's $inc is a read and a
   * write, and two at once lose one (MongoDB's is atomic). Across replicas on FerretDB, changes of
   * one owner at the same moment may still lose one; see `tallies`.
   */
  const tallying = new Map<string, Promise<void>>();
  /** Moves `owner`'s tally from an agent's status `before` to `after` (undefined: no agent). */
  function retally(owner: string, before: AgentStatus | undefined, after: AgentStatus | undefined) {
    const from = weightOf(before);
    const to = weightOf(after);
    const held = to.held - from.held;
    const pending = to.pending - from.pending;
    if (held === 0 && pending === 0) return Promise.resolve();
    const done = (tallying.get(owner) ?? Promise.resolve()).then(() => tally(owner, { held, pending }));
    tallying.set(owner, done);
    void done.finally(() => {
      if (tallying.get(owner) === done) tallying.delete(owner);
    });
    return done;
  }
  async function tally(owner: string, change: { held: number; pending: number }): Promise<void> {
    const inc = { $inc: change };
    try {
      await tallies.updateOne({ _id: owner }, inc, { upsert: true }).catch(async (err: unknown) => {
        // Two first changes of one owner raced to insert its tally: it exists now.
        if (!isDuplicateKey(err)) throw err;
        await tallies.updateOne({ _id: owner }, inc);
      });
    } catch {
      // The agent's own write is done and stands; its tally is one change off (see `tallies`).
    }
  }

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
    indexes ??= createIndexes(agents, keys, versions).catch((err: unknown) => {
      indexes = undefined;
      throw err;
    });
    return indexes;
  }

  /**
   * Whether the client holds an open topology. The driver's auto-connect cannot be relied on alone:
   * when the very first connect fails (database down at startup), mongodb 7.9 closes the new
   * topology but keeps it on the client, and every later operation fails with "Topology is closed"
   * even after the server is back. An explicit `client.connect()` replaces a closed topology, so
   * calls connect first until one connect has succeeded. Once connected, the driver's monitor
   * reconnects by itself after outages and the topology stays open.
   */
  let connected = false;
  let closed = false;

  async function connectOnce(): Promise<void> {
    if (connected || closed) return; // after close(), operations fail (MongoNotConnectedError)
    await client.connect();
    connected = true;
  }

  const operationTimeoutMS = options.operationTimeoutMS ?? DEFAULT_OPERATION_TIMEOUT_MS;
  /**
   * Server-side bound for the queries that can scan (lists, counts, due agents, key lookups): a
   * call that gives up after operationTimeoutMS must not leave its query running on the database.
   */
  const bounded = { maxTimeMS: operationTimeoutMS };

  /**
   * Runs `op` connected, mapping unavailability to UnavailableError, within `operationTimeoutMS`.
   * The driver bounds each attempt (socket, connect and selection timeouts), but a server that
   * accepts connections and then stops answering costs a timeout per retry and reconnect; the
   * caller still gets its answer in bounded time.
   */
  async function guarded<T>(op: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new UnavailableError(UNAVAILABLE_MESSAGE, { cause: new Error("operation timed out") })),
        operationTimeoutMS,
      );
      // The caller gave up (its deadline passed, or it went away): stop waiting for the database
      // at once. The reads themselves carry the signal, and maxTimeMS bounds them on the server.
      if (signal !== undefined) {
        onAbort = () => reject(signal.reason);
        if (signal.aborted) onAbort();
        else signal.addEventListener("abort", onAbort, { once: true });
      }
    });
    try {
      const work = (async () => {
        await connectOnce();
        return await op();
      })();
      // A late rejection of the abandoned attempt must not surface as unhandled.
      work.catch(() => {});
      return await Promise.race([work, deadline]);
    } catch (err) {
      if (err instanceof UnavailableError) throw err;
      if (signal?.aborted === true && err === signal.reason) throw err;
      if (err instanceof MongoTopologyClosedError && !closed) connected = false;
      throw mapError(err);
    } finally {
      clearTimeout(timer);
      if (onAbort !== undefined) signal?.removeEventListener("abort", onAbort);
    }
  }

  /** Runs `op` connected and after the indexes exist. */
  function run<T>(op: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    return guarded(async () => {
      await ensureIndexes();
      return op();
    }, signal);
  }

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
    countOf: (owner) =>
      run(async () => {
        const tally = await tallies.findOne({ _id: owner });
        if (tally?.counted === true) {
          return { held: Math.max(0, tally.held), pending: Math.max(0, tally.pending) };
        }
        // The owner's first count (agents made before tallies existed, or changes tallied before
        // it): the agents themselves, once, then the tally goes on from there.
        const groups = await agents
          .aggregate<{ _id: AgentStatus; n: number }>(
            [{ $match: { owner } }, { $group: { _id: "$status", n: { $sum: 1 } } }],
            bounded,
          )
          .toArray();
        const of = (status: AgentStatus) => groups.find((g) => g._id === status)?.n ?? 0;
        const counts = { held: of("pending") + of("active") + of("paused"), pending: of("pending") };
        await tallies
          .updateOne(
            { _id: owner, counted: { $ne: true } },
            { $set: { ...counts, counted: true } },
            { upsert: true },
          )
          .catch((err: unknown) => {
            // Another replica counted first: its tally stands.
            if (!isDuplicateKey(err)) throw err;
          });
        return counts;
      }),
    get: (owner, agentId, options) =>
      run(async () => {
        // By `_id` alone (FerretDB pushes nothing else down), the owner checked here.
        const doc = await agents.findOne({ _id: agentId }, signalOf(options));
        return doc === null || doc.owner !== owner ? undefined : fromDoc(doc);
      }, options?.signal),
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
    due: (nowDate, limit) =>
      run(async () => {
        // One index range scan on {status, nextRunAt}.
        const docs = await agents
          .find({ status: "active", nextRunAt: { $lte: nowDate } }, bounded)
          .sort({ nextRunAt: 1 })
          .limit(limit)
          .toArray();
        return docs.map(handOut);
      }),
    pending: (after, limit) =>
      run(async () => {
        // One index range scan on {status, createdAt, _id} (on MongoDB; FerretDB reads them all).
        const docs = await agents
          .find(
            after === undefined
              ? { status: "pending" }
              : {
                  status: "pending",
                  $or: [
                    { createdAt: { $gt: after.createdAt } },
                    { createdAt: after.createdAt, _id: { $gt: after.agentId } },
                  ],
                },
            bounded,
          )
          .sort({ createdAt: 1, _id: 1 })
          .limit(limit)
          .toArray();
        return docs.map(handOut);
      }),
    newestPending: (limit) =>
      run(async () => {
        const docs = await agents
          .find({ status: "pending" }, bounded)
          .sort({ createdAt: -1, _id: -1 })
          .limit(limit)
          .toArray();
        return docs.map(handOut);
      }),
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
    list: (owner, query: AgentListQuery) =>
      run(async (): Promise<AgentListPage> => {
        const filter: { owner: string; type?: AgentType; status?: AgentStatus } = { owner };
        if (query.type !== undefined) filter.type = query.type;
        if (query.status !== undefined) filter.status = query.status;
        const { after } = query;
        // Keyset paging: strictly after the cursor in (createdAt, _id) descending order.
        const page =
          after === undefined
            ? filter
            : {
                ...filter,
                $or: [
                  { createdAt: { $lt: after.createdAt } },
                  { createdAt: after.createdAt, _id: { $lt: after.agentId } },
                ],
              };
        const [docs, total] = await Promise.all([
          agents
            .find(page, { ...bounded, ...signalOf(query) })
            .sort({ createdAt: -1, _id: -1 })
            .skip(query.offset)
            .limit(query.limit)
            .toArray(),
          agents.countDocuments(filter, { ...bounded, ...signalOf(query) }),
        ]);
        return { agents: docs.map(fromDoc), total };
      }, query.signal),
    ping: () =>
      guarded(async () => {
        await db.command({ ping: 1 });
      }),
    close: async () => {
      closed = true;
      await client.close();
    },
  };
}

/**
 * The database named in the URI's path (`mongodb://host/<db>?...`), if any. The driver itself falls
 * back to "test", which is why this does not ask `client.db()`. Userinfo cannot hold an unescaped
 * "/", so the first "/" after the scheme starts the path.
 */
export function databaseInUri(uri: string): string | undefined {
  const rest = uri.replace(/^mongodb(\+srv)?:\/\//i, "");
  const slash = rest.indexOf("/");
  if (slash < 0) return undefined;
  const path = rest.slice(slash + 1).split("?")[0] ?? "";
  return path === "" ? undefined : decodeURIComponent(path);
}

async function createIndexes(
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

function toDoc(record: AgentRecord): AgentDoc {
  const doc: AgentDoc = {
    _id: record.agentId,
    owner: record.owner,
    type: record.type,
    status: record.status,
    config: record.config,
    createdAt: record.createdAt,
  };
  if (record.lastRunAt !== undefined) doc.lastRunAt = record.lastRunAt;
  if (record.nextRunAt !== undefined) doc.nextRunAt = record.nextRunAt;
  if (record.failureReason !== undefined) doc.failureReason = record.failureReason;
  if (record.consecutiveFailures !== undefined) doc.consecutiveFailures = record.consecutiveFailures;
  if (record.decimals !== undefined) doc.decimals = record.decimals;
  return doc;
}

/** The driver's `signal` option for a read, when the caller gave one. */
function signalOf(options: { readonly signal?: AbortSignal | undefined } | undefined): {
  signal?: AbortSignal;
} {
  return options?.signal === undefined ? {} : { signal: options.signal };
}

/** An AgentPatch as the fields to set and to remove. */
function fieldChangeOf(patch: AgentPatch): FieldChange {
  const set: Record<string, unknown> = {};
  const unset: string[] = [];
  for (const [field, value] of Object.entries(patch)) {
    if (value === null) unset.push(field);
    else if (value !== undefined) set[field] = value;
  }
  return { set, unset };
}

/** Exactly the AgentRecord fields, in the memory adapter's order; optional ones only when set. */
function fromDoc(doc: AgentDoc): AgentRecord {
  return {
    agentId: doc._id,
    owner: doc.owner,
    type: doc.type,
    status: doc.status,
    config: doc.config,
    createdAt: doc.createdAt,
    ...(doc.lastRunAt == null ? {} : { lastRunAt: doc.lastRunAt }),
    ...(doc.nextRunAt == null ? {} : { nextRunAt: doc.nextRunAt }),
    ...(doc.failureReason == null ? {} : { failureReason: doc.failureReason }),
    ...(doc.consecutiveFailures == null ? {} : { consecutiveFailures: doc.consecutiveFailures }),
    ...(doc.decimals == null ? {} : { decimals: doc.decimals }),
  };
}

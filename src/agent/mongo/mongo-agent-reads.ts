/** The agent store's reads, each served by one of its indexes (see mongo-agent-indexes.ts). */
import type { Collection } from "mongodb";
import type {
  AgentListPage,
  AgentListQuery,
  AgentRecord,
  AgentStatus,
  AgentStore,
  AgentType,
  PendingCursor,
} from "../agent-store.ts";
import { type AgentDoc, fromDoc } from "./mongo-agent-docs.ts";

export interface MongoAgentReadsOptions {
  readonly agents: Collection<AgentDoc>;
  /** Server-side bound for the queries that can scan. */
  readonly bounded: { readonly maxTimeMS: number };
  /** The record of a document the scheduler may update next (`due`, `pending`). */
  readonly handOut: (doc: AgentDoc) => AgentRecord;
  /** Runs one read the way the store runs its operations (see `guard`). */
  readonly run: <T>(op: () => Promise<T>, signal?: AbortSignal) => Promise<T>;
}

export type MongoAgentReads = Pick<
  AgentStore,
  "get" | "due" | "pending" | "newestPending" | "list" | "watching"
>;

export function createMongoAgentReads(options: MongoAgentReadsOptions): MongoAgentReads {
  const { agents, bounded, handOut, run } = options;
  return {
    get: (owner, agentId, options) =>
      run(async () => {
        // By `_id` alone (FerretDB pushes nothing else down), the owner checked here.
        const doc = await agents.findOne({ _id: agentId }, signalOf(options));
        return doc === null || doc.owner !== owner ? undefined : fromDoc(doc);
      }, options?.signal),
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
          .find(pendingFilter(after), bounded)
          .sort({ createdAt: 1, _id: 1 })
          .limit(limit)
          .toArray();
        return docs.map(handOut);
      }),
    watching: (type, after, limit) =>
      run(async () => {
        // One index range scan on {type, status, _id}.
        const docs = await agents
          .find(
            {
              type,
              status: { $in: ["active", "paused"] },
              ...(after === undefined ? {} : { _id: { $gt: after } }),
            },
            bounded,
          )
          .sort({ _id: 1 })
          .limit(limit)
          .toArray();
        return docs.map(fromDoc);
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
    list: (owner, query: AgentListQuery) =>
      run(async (): Promise<AgentListPage> => {
        const { filter, page } = listFilters(owner, query);
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
  };
}

/** Pending agents after `after` in (createdAt, _id) ascending order, all of them without it. */
function pendingFilter(after: PendingCursor | undefined) {
  return after === undefined
    ? { status: "pending" as const }
    : {
        status: "pending" as const,
        $or: [
          { createdAt: { $gt: after.createdAt } },
          { createdAt: after.createdAt, _id: { $gt: after.agentId } },
        ],
      };
}

/**
 * An owner's agents as `query` selects them: `filter` for the total, `page` for the page (keyset
 * paging: strictly after the cursor in (createdAt, _id) descending order).
 */
function listFilters(owner: string, query: AgentListQuery) {
  const filter: { owner: string; type?: AgentType; status?: AgentStatus } = { owner };
  if (query.type !== undefined) filter.type = query.type;
  if (query.status !== undefined) filter.status = query.status;
  const { after } = query;
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
  return { filter, page };
}

/** The driver's `signal` option for a read, when the caller gave one. */
function signalOf(options: { readonly signal?: AbortSignal | undefined } | undefined): {
  signal?: AbortSignal;
} {
  return options?.signal === undefined ? {} : { signal: options.signal };
}

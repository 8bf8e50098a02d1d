/**
 * The agent store port. Every read and write is scoped by `owner`, the caller's principal, so an
 * agent is invisible to everybody but its owner; authentication only has to supply the principal.
 * Two adapters implement it with identical behaviour (MongoDB, and in-memory as the embedded
 * default); one contract suite (`test/agent-store.contract.ts`) holds them to it.
 */

export const AGENT_TYPES = ["transfer", "swap"] as const;
export type AgentType = (typeof AGENT_TYPES)[number];

export const AGENT_STATUSES = ["pending", "active", "paused"] as const;
export type AgentStatus = (typeof AGENT_STATUSES)[number];

/** A JSON object, as an agent's config is stored and returned. */
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };
export type JsonObject = { [key: string]: JsonValue };

export interface AgentRecord {
  /** Opaque, URL-safe, unguessable (128 random bits); the MongoDB `_id`. */
  readonly agentId: string;
  readonly owner: string;
  readonly type: AgentType;
  readonly status: AgentStatus;
  readonly config: JsonObject;
  readonly createdAt: Date;
  /** Absent until the agent has run once. */
  readonly lastRunAt?: Date;
  readonly nextRunAt: Date;
}

/** What `create` needs: a full record, and optionally the caller's idempotency key. */
export interface NewAgent {
  readonly record: AgentRecord;
  /**
   * When set, a create with the same owner and key whose first use is less than `idempotencyTtlMs`
   * old returns the agent created first instead of storing `record`, also under concurrent repeats.
   */
  readonly idempotencyKey?: string;
}

export interface CreateResult {
  readonly agent: AgentRecord;
  /** False when an earlier agent was returned for a repeated idempotency key. */
  readonly created: boolean;
}

export interface AgentListQuery {
  readonly type?: AgentType;
  readonly status?: AgentStatus;
  /** 1..100, already validated. */
  readonly limit: number;
  /** >= 0, already validated. */
  readonly offset: number;
}

export interface AgentListPage {
  /** Newest first: createdAt descending, then agentId descending. */
  readonly agents: readonly AgentRecord[];
  /** Number of the owner's agents matching the filters, regardless of limit and offset. */
  readonly total: number;
}

export interface AgentStore {
  create(agent: NewAgent): Promise<CreateResult>;
  get(owner: string, agentId: string): Promise<AgentRecord | undefined>;
  /** True when this call deleted the agent; false when it did not exist (for this owner). */
  delete(owner: string, agentId: string): Promise<boolean>;
  list(owner: string, query: AgentListQuery): Promise<AgentListPage>;
  /** Resolves when the store can serve; throws UnavailableError when it cannot (readiness). */
  ping(): Promise<void>;
  close(): Promise<void>;
}

/**
 * A deep copy with exactly the AgentRecord fields (`lastRunAt` only when set): what every adapter
 * returns, so callers can neither see storage fields nor mutate stored state.
 */
export function copyAgentRecord(record: AgentRecord): AgentRecord {
  return {
    agentId: record.agentId,
    owner: record.owner,
    type: record.type,
    status: record.status,
    config: structuredClone(record.config),
    createdAt: new Date(record.createdAt.getTime()),
    ...(record.lastRunAt === undefined ? {} : { lastRunAt: new Date(record.lastRunAt.getTime()) }),
    nextRunAt: new Date(record.nextRunAt.getTime()),
  };
}

/** How long an idempotency key keeps returning the first agent. */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;

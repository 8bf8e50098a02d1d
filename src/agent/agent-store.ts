/**
 * The agent store port. Every read and write is scoped by `owner`, the caller's principal, so an
 * agent is invisible to everybody but its owner; authentication only has to supply the principal.
 * Two adapters implement it with identical behaviour (MongoDB, and in-memory as the embedded
 * default); one contract suite (`test/agent-store.contract.ts`) holds them to it.
 */

/** An agent kind's name (src/kinds/): the store keeps it as given, the kinds' registry knows them. */
export type AgentType = string;

export const AGENT_STATUSES = ["pending", "active", "paused", "failed", "completed", "expired"] as const;
export type AgentStatus = (typeof AGENT_STATUSES)[number];

/**
 * The statuses an agent never leaves: it failed, it did what it was for (a trigger order filled),
 * or its time ran out with nothing done. It holds no place under the owner's caps.
 */
export const TERMINAL_STATUSES: ReadonlySet<AgentStatus> = new Set(["failed", "completed", "expired"]);

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
  /** Present while the agent is pending or active; absent while paused or failed. */
  readonly nextRunAt?: Date;
  /** Why the agent failed; only while its status is "failed". */
  readonly failureReason?: string;
  /** Failed runs (slots) in a row since the last success; absent means 0. */
  readonly consecutiveFailures?: number;
  /**
   * What the agent's kind keeps between runs (a trigger order's firing: its leg and reference
   * price); opaque to the store and the scheduler.
   */
  readonly state?: JsonObject;
  /**
   * The decimals of the token its amount is counted in, as CreateAgent checked the amount with
   * them: a run refuses a mint whose decimals differ since (absent on agents created before).
   */
  readonly decimals?: number;
}

/**
 * A change to an agent's lifecycle fields. `null` removes a field. Everything else about an agent
 * is fixed at creation.
 */
export interface AgentPatch {
  readonly status?: AgentStatus;
  readonly nextRunAt?: Date | null;
  readonly lastRunAt?: Date;
  readonly consecutiveFailures?: number;
  readonly failureReason?: string | null;
  readonly state?: JsonObject | null;
  /**
   * The lifecycle event this change is (set by the announcing store, see src/events/): written
   * with the change itself, so a change whose event was never appended can be found and
   * announced later. Kept in storage only; never part of an AgentRecord.
   */
  readonly announced?: { readonly type: string; readonly at: Date; readonly data?: JsonObject };
  /**
   * An event this change is, when it changes no status (a trigger order's `trigger.fired`): the
   * announcing store turns it into `announced`. Never stored as itself.
   */
  readonly announce?: { readonly type: string; readonly data?: JsonObject };
}

/** Applies a patch to a record (a new record; the input is not changed). */
export function patchedRecord(record: AgentRecord, patch: AgentPatch): AgentRecord {
  const next: Record<string, unknown> = { ...record };
  for (const [field, value] of Object.entries(patch)) {
    if (field === "announced" || field === "announce") continue;
    if (value === null) delete next[field];
    else if (value !== undefined) next[field] = value;
  }
  return next as unknown as AgentRecord;
}

/** What `create` needs: a full record, and optionally the caller's idempotency key. */
export interface NewAgent {
  readonly record: AgentRecord;
  /**
   * When set, a create with the same owner and key whose first use is less than `idempotencyTtlMs`
   * old returns the agent created first instead of storing `record`, also under concurrent repeats.
   */
  readonly idempotencyKey?: string;
  /**
   * With a key: what identifies the request (type and config). A repeat of the key with another
   * fingerprint is refused (FailedPreconditionError) instead of answered with the first agent.
   */
  readonly fingerprint?: string;
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
  /** Keyset paging: only agents after this one in list order (newest first). */
  readonly after?: { readonly createdAt: Date; readonly agentId: string };
  /** The caller's signal: when it aborts (deadline passed, client gone), the read stops. */
  readonly signal?: AbortSignal;
}

/** Options of a single read. */
export interface ReadOptions {
  /** The caller's signal: when it aborts (deadline passed, client gone), the read stops. */
  readonly signal?: AbortSignal;
}

/** Options of `update`. */
export interface UpdateOptions {
  /**
   * The agent as this store handed it out a moment ago (from `due`): the change may be tried on it
   * before the agent is read again. A copy that turned out stale costs a retry, never a lost
   * change; `change` may then be called again with the newest state.
   */
  readonly known?: AgentRecord;
}

export interface AgentListPage {
  /** Newest first: createdAt descending, then agentId descending. */
  readonly agents: readonly AgentRecord[];
  /** Number of the owner's agents matching the filters, regardless of limit and offset. */
  readonly total: number;
}

/** A place in the order of pending agents: after the agent with this createdAt and id. */
export interface PendingCursor {
  readonly createdAt: Date;
  readonly agentId: string;
}

/** How many agents one owner holds, for the caps per owner (see owner-caps.ts). */
export interface OwnerAgentCounts {
  /** Pending, active and paused: every agent that may still run (failed ones are not counted). */
  readonly held: number;
  readonly pending: number;
}

export interface AgentStore {
  create(agent: NewAgent): Promise<CreateResult>;
  /** How many agents `owner` holds (see OwnerAgentCounts). */
  countOf(owner: string): Promise<OwnerAgentCounts>;
  get(owner: string, agentId: string, options?: ReadOptions): Promise<AgentRecord | undefined>;
  /** True when this call deleted the agent; false when it did not exist (for this owner). */
  delete(owner: string, agentId: string): Promise<boolean>;
  list(owner: string, query: AgentListQuery): Promise<AgentListPage>;
  /**
   * Up to `limit` active agents of every owner whose nextRunAt is at or before `now`, earliest
   * first: the runs that are due.
   */
  due(now: Date, limit: number): Promise<readonly AgentRecord[]>;
  /**
   * Up to `limit` pending agents of every owner, oldest first (createdAt, then agentId), after
   * `after` when given: the scheduler learns of new pending agents from the end of this order,
   * and sweeps the whole of it now and then (see pending-agents.ts).
   */
  pending(after: PendingCursor | undefined, limit: number): Promise<readonly AgentRecord[]>;
  /**
   * Up to `limit` agents of `type` that are active or paused, by agentId after `after` (a page of
   * them all, across owners): what a kind that watches something (a trigger order's price) keeps
   * in view.
   */
  watching(type: string, after: string | undefined, limit: number): Promise<readonly AgentRecord[]>;
  /** The `limit` newest pending agents of every owner, newest first: how the scheduler learns of new ones. */
  newestPending(limit: number): Promise<readonly AgentRecord[]>;
  /**
   * Changes an agent's lifecycle fields without losing a concurrent change: `change` is called
   * with the newest state (again, if another change won a race) and returns the patch, or
   * undefined to leave the agent as it is; what it throws propagates. Resolves with the agent
   * after the change, or undefined when it does not exist (for this owner).
   */
  update(
    owner: string,
    agentId: string,
    change: (current: AgentRecord) => AgentPatch | undefined,
    options?: UpdateOptions,
  ): Promise<AgentRecord | undefined>;
  /** Resolves when the store can serve; throws UnavailableError when it cannot (readiness). */
  ping(): Promise<void>;
  close(): Promise<void>;
}

/**
 * A deep copy with exactly the AgentRecord fields (optional ones only when set): what every adapter
 * returns, so callers can neither see storage fields nor mutate stored state.
 */
export function copyAgentRecord(record: AgentRecord): AgentRecord {
  return {
    agentId: record.agentId,
    owner: record.owner,
    type: record.type,
    status: record.status,
    config: copyJson(record.config) as JsonObject,
    createdAt: new Date(record.createdAt.getTime()),
    ...(record.lastRunAt === undefined ? {} : { lastRunAt: new Date(record.lastRunAt.getTime()) }),
    ...(record.nextRunAt === undefined ? {} : { nextRunAt: new Date(record.nextRunAt.getTime()) }),
    ...(record.failureReason === undefined ? {} : { failureReason: record.failureReason }),
    ...(record.consecutiveFailures === undefined ? {} : { consecutiveFailures: record.consecutiveFailures }),
    ...(record.state === undefined ? {} : { state: copyJson(record.state) as JsonObject }),
    ...(record.decimals === undefined ? {} : { decimals: record.decimals }),
  };
}

/**
 * A deep copy of JSON data, as structuredClone makes it (own keys, plain objects and arrays), a
 * few times faster: the scheduler copies every due agent it looks at, each poll.
 */
function copyJson(value: JsonValue): JsonValue {
  if (value === null || typeof value !== "object") return value;
  if (Array.isArray(value)) return value.map(copyJson);
  const out: { [key: string]: JsonValue } = {};
  for (const key of Object.keys(value)) {
    const inner = copyJson(value[key] as JsonValue);
    // An own "__proto__" key (JSON.parse makes one) stays a key, not the copy's prototype.
    if (key === "__proto__")
      Object.defineProperty(out, key, { value: inner, enumerable: true, writable: true, configurable: true });
    else out[key] = inner;
  }
  return out;
}

/** How long an idempotency key keeps returning the first agent. */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;

/**
 * The agent store's documents and their conversion from and to the domain's records. Optional
 * fields are stored only when set, and read back only when present, as the memory adapter holds them.
 */
import type { AgentPatch, AgentRecord, AgentStatus, AgentType, JsonObject } from "../agent-store.ts";
import type { FieldChange } from "../mongo-versioned-update.ts";

export interface AgentDoc {
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
  state?: JsonObject;
  decimals?: number;
  /** Lifecycle changes so far (see mongo-versioned-update.ts); absent means 0. */
  version?: number;
  /** [key, generation] of the idempotency key it was created under, if any. */
  idempotencyKeyGen?: [string, number];
}

/** An owner's agents as the caps count them; see mongo-agent-tallies.ts. */
export interface TallyDoc {
  _id: string;
  held: number;
  pending: number;
  /** Set once the owner's agents were counted: until then the changes alone say nothing. */
  counted?: boolean;
}

/** The deletion of an agent made under an idempotency key; see mongo-keyed-create.ts. */
export interface TombstoneDoc {
  _id: string;
  owner: string;
  deletedAt: Date;
}

/** One generation of an idempotency key; see mongo-keyed-create.ts. Never updated once inserted. */
export interface KeyDoc {
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

export function toDoc(record: AgentRecord): AgentDoc {
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
  if (record.state !== undefined) doc.state = record.state;
  if (record.decimals !== undefined) doc.decimals = record.decimals;
  return doc;
}

/** An AgentPatch as the fields to set and to remove. */
export function fieldChangeOf(patch: AgentPatch): FieldChange {
  const set: Record<string, unknown> = {};
  const unset: string[] = [];
  for (const [field, value] of Object.entries(patch)) {
    if (field === "announce") continue;
    if (value === null) unset.push(field);
    else if (value !== undefined) set[field] = value;
  }
  return { set, unset };
}

/** Exactly the AgentRecord fields, in the memory adapter's order; optional ones only when set. */
export function fromDoc(doc: AgentDoc): AgentRecord {
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
    ...(doc.state == null ? {} : { state: doc.state }),
    ...(doc.decimals == null ? {} : { decimals: doc.decimals }),
  };
}

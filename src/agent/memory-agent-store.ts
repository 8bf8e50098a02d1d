/**
 * The in-process AgentStore: the embedded default, and the reference the MongoDB adapter is held to
 * by the shared contract suite. State lives in maps and dies with the process.
 *
 * Every method does its work synchronously before it returns, so calls cannot interleave and
 * concurrent repeats of one idempotency key are serialised for free. Records go in and come out as
 * deep copies (structuredClone), so callers can never mutate stored state.
 */

import { FailedPreconditionError } from "../domain/errors.ts";
import {
  type AgentListPage,
  type AgentListQuery,
  type AgentRecord,
  type AgentStore,
  type CreateResult,
  copyAgentRecord,
  IDEMPOTENCY_TTL_MS,
  type NewAgent,
  patchedRecord,
  TERMINAL_STATUSES,
} from "./agent-store.ts";
import { createDueQueue } from "./due-queue.ts";
import { createOwnerAgentIndex, type OwnerAgentIndex } from "./owner-agent-index.ts";

export interface MemoryAgentStoreOptions {
  /** The clock for idempotency-key expiry; tests move it. */
  readonly now?: () => Date;
}

interface KeyEntry {
  /** The agent as first created: replayed if its owner deleted it since. */
  readonly record: AgentRecord;
  readonly fingerprint: string;
  /** Epoch ms; the key returns its agent while now < expiresAt. */
  readonly expiresAt: number;
}

/** Keyed entries are swept of expired ones when the map reaches this size, then at twice its size. */
const MIN_SWEEP_SIZE = 1024;

export function createMemoryAgentStore(options: MemoryAgentStoreOptions = {}): AgentStore {
  const now = options.now ?? (() => new Date());
  /** owner -> that owner's agents (canonical records, never handed out), in list order. */
  const byOwner = new Map<string, OwnerAgentIndex>();
  /** JSON.stringify([owner, key]) -> entry; the encoding keeps ("a:b","c") and ("a","b:c") apart. */
  const keys = new Map<string, KeyEntry>();
  let nextSweepAt = MIN_SWEEP_SIZE;
  /** What `due` answers from, in order: kept up to date by every change below. */
  const dueQueue = createDueQueue();

  function agentsOf(owner: string): OwnerAgentIndex | undefined {
    return byOwner.get(owner);
  }

  function insert(record: AgentRecord): void {
    let agents = byOwner.get(record.owner);
    if (agents === undefined) {
      agents = createOwnerAgentIndex();
      byOwner.set(record.owner, agents);
    }
    const stored = copyAgentRecord(record);
    agents.add(stored);
    dueQueue.set(stored.owner, stored.agentId, stored);
  }

  function sweepKeys(nowMs: number): void {
    if (keys.size < nextSweepAt) return;
    for (const [id, entry] of keys) {
      if (entry.expiresAt <= nowMs) keys.delete(id);
    }
    nextSweepAt = Math.max(MIN_SWEEP_SIZE, keys.size * 2);
  }

  function create({ record, idempotencyKey, fingerprint = "" }: NewAgent): CreateResult {
    if (idempotencyKey === undefined) {
      insert(record);
      return { agent: copyAgentRecord(record), created: true };
    }
    const nowMs = now().getTime();
    sweepKeys(nowMs);
    const keyId = JSON.stringify([record.owner, idempotencyKey]);
    const entry = keys.get(keyId);
    if (entry !== undefined && nowMs < entry.expiresAt) {
      if (entry.fingerprint !== fingerprint) {
        throw new FailedPreconditionError(
          "idempotency-key was first used with a different request. Use a new key for a new request",
        );
      }
      const first = agentsOf(record.owner)?.get(entry.record.agentId);
      // Deleted by its owner since: the first answer is replayed, the agent stays deleted.
      return { agent: copyAgentRecord(first ?? entry.record), created: false };
    }
    insert(record);
    keys.set(keyId, { record: copyAgentRecord(record), fingerprint, expiresAt: nowMs + IDEMPOTENCY_TTL_MS });
    return { agent: copyAgentRecord(record), created: true };
  }

  function list(owner: string, query: AgentListQuery): AgentListPage {
    const page = agentsOf(owner)?.page(query) ?? { agents: [], total: 0 };
    return { agents: page.agents.map((a) => structuredClone(a)), total: page.total };
  }

  return {
    create: async (agent) => create(agent),
    countOf: async (owner) => {
      const agents = agentsOf(owner);
      if (agents === undefined) return { held: 0, pending: 0 };
      return {
        held: agents.size - [...TERMINAL_STATUSES].reduce((n, status) => n + agents.countByStatus(status), 0),
        pending: agents.countByStatus("pending"),
      };
    },
    get: async (owner, agentId) => {
      const agent = agentsOf(owner)?.get(agentId);
      return agent === undefined ? undefined : structuredClone(agent);
    },
    delete: async (owner, agentId) => {
      const agents = agentsOf(owner);
      if (agents === undefined || !agents.remove(agentId)) return false;
      if (agents.size === 0) byOwner.delete(owner);
      dueQueue.set(owner, agentId, undefined);
      return true;
    },
    list: async (owner, query) => list(owner, query),
    due: async (now, limit) => dueQueue.due(now.getTime(), limit).map(copyAgentRecord),
    pending: async (after, limit) => dueQueue.pending(after, limit).map(copyAgentRecord),
    watching: async (type, after, limit) => {
      // A scan of every agent: the memory store serves one process, and its watcher pages
      // through every open agent of the type on each refresh anyway.
      const open: AgentRecord[] = [];
      for (const agents of byOwner.values()) {
        for (const agent of agents.values()) {
          const live = agent.status === "active" || agent.status === "paused";
          if (live && agent.type === type && (after === undefined || agent.agentId > after)) open.push(agent);
        }
      }
      open.sort((a, b) => (a.agentId < b.agentId ? -1 : a.agentId > b.agentId ? 1 : 0));
      return open.slice(0, limit).map(copyAgentRecord);
    },
    newestPending: async (limit) => dueQueue.newestPending(limit).map(copyAgentRecord),
    update: async (owner, agentId, change) => {
      // Synchronous from read to write, so no other change can come between (single process).
      const agents = agentsOf(owner);
      const current = agents?.get(agentId);
      if (agents === undefined || current === undefined) return undefined;
      const patch = change(copyAgentRecord(current));
      if (patch === undefined) return copyAgentRecord(current);
      const next = patchedRecord(current, patch);
      agents.replace(next);
      dueQueue.set(owner, agentId, next);
      return copyAgentRecord(next);
    },
    ping: async () => {},
    close: async () => {},
  };
}

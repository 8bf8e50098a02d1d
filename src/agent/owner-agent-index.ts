import type { AgentListPage, AgentListQuery, AgentRecord } from "./agent-store.ts";

/**
 * One owner's agents in the memory store, kept in list order (newest first) and counted by type
 * and status, so that a page costs a binary search and the page itself (unfiltered), or a scan up
 * to the page (filtered), instead of sorting every agent on every call. Records are stored as
 * given; the store copies them in and out.
 */
export interface OwnerAgentIndex {
  readonly size: number;
  /** Agents of each status (from counts kept up to date, not a scan). */
  countByStatus(status: AgentRecord["status"]): number;
  get(agentId: string): AgentRecord | undefined;
  /** Adds a new agent; throws on a duplicate id. */
  add(record: AgentRecord): void;
  /** Replaces an agent's record (its createdAt and id, which decide the order, never change). */
  replace(record: AgentRecord): void;
  /** Removes an agent; false when there was none. */
  remove(agentId: string): boolean;
  page(query: AgentListQuery): AgentListPage;
  values(): IterableIterator<AgentRecord>;
}

export function createOwnerAgentIndex(): OwnerAgentIndex {
  const byId = new Map<string, AgentRecord>();
  /** Newest first: createdAt descending, then agentId descending (MongoDB's binary order). */
  const ordered: AgentRecord[] = [];
  /** `${type}|${status}` -> number of agents. */
  const counts = new Map<string, number>();

  const count = (record: AgentRecord, delta: number) => {
    const key = `${record.type}|${record.status}`;
    counts.set(key, (counts.get(key) ?? 0) + delta);
  };
  /**
   * The index of `record` in `ordered`, or where it would go; with `after`, the first index past
   * it. Only createdAt and agentId are read, so a cursor works as well as a record.
   */
  const position = (record: Pick<AgentRecord, "createdAt" | "agentId">, after = false): number => {
    let low = 0;
    let high = ordered.length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      const order = newestFirst(ordered[mid] as AgentRecord, record as AgentRecord);
      if (order < 0 || (after && order === 0)) low = mid + 1;
      else high = mid;
    }
    return low;
  };
  const matches = (record: AgentRecord, query: AgentListQuery) =>
    (query.type === undefined || record.type === query.type) &&
    (query.status === undefined || record.status === query.status);

  return {
    get size() {
      return byId.size;
    },
    countByStatus(status) {
      let n = 0;
      for (const [key, count] of counts) if (key.endsWith(`|${status}`)) n += count;
      return n;
    },
    get: (agentId) => byId.get(agentId),
    add(record) {
      if (byId.has(record.agentId)) throw new Error("duplicate agentId");
      byId.set(record.agentId, record);
      ordered.splice(position(record), 0, record);
      count(record, 1);
    },
    replace(record) {
      const old = byId.get(record.agentId);
      if (old === undefined) return;
      byId.set(record.agentId, record);
      ordered[position(old)] = record;
      count(old, -1);
      count(record, 1);
    },
    remove(agentId) {
      const old = byId.get(agentId);
      if (old === undefined) return false;
      byId.delete(agentId);
      ordered.splice(position(old), 1);
      count(old, -1);
      return true;
    },
    page(query) {
      let total = 0;
      for (const [key, n] of counts) {
        const [type, status] = key.split("|");
        if (
          (query.type === undefined || type === query.type) &&
          (query.status === undefined || status === query.status)
        ) {
          total += n;
        }
      }
      // Keyset paging starts right after the cursor's place in the order.
      const from = query.after === undefined ? 0 : position(query.after, true);
      if (query.type === undefined && query.status === undefined) {
        return { agents: ordered.slice(from + query.offset, from + query.offset + query.limit), total };
      }
      const agents: AgentRecord[] = [];
      let skipped = 0;
      for (let i = from; i < ordered.length; i++) {
        const record = ordered[i] as AgentRecord;
        if (agents.length === query.limit) break;
        if (!matches(record, query)) continue;
        if (skipped < query.offset) skipped++;
        else agents.push(record);
      }
      return { agents, total };
    },
    values: () => byId.values(),
  };
}

/** createdAt descending, then agentId descending by code unit (as MongoDB's binary string order). */
export function newestFirst(a: AgentRecord, b: AgentRecord): number {
  const byTime = b.createdAt.getTime() - a.createdAt.getTime();
  if (byTime !== 0) return byTime;
  return a.agentId < b.agentId ? 1 : a.agentId > b.agentId ? -1 : 0;
}

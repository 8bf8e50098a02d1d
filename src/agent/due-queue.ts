import type { AgentRecord, PendingCursor } from "./agent-store.ts";

/**
 * The memory store's due agents in the order `due` gives them, without looking at every agent:
 * active ones from a min-heap keyed by `nextRunAt`, and the pending ones apart (the scheduler pages
 * through those itself). A poll costs its answer and a logarithm, whatever the number of agents.
 *
 * The store replaces an agent's record on every change (a run advances `nextRunAt`, a pause clears
 * it) and tells the queue (`set`). The heap is not searched for the old entry: each change pushes
 * a new one, and an entry whose record is no longer the agent's current one is dropped when it
 * comes to the top (lazy deletion). Records are the store's own; the store copies them out.
 */
export interface DueQueue {
  /** The agent's record after a change (create, update), or undefined once it was deleted. */
  set(owner: string, agentId: string, record: AgentRecord | undefined): void;
  /** Up to `limit` active records due at `nowMs`, earliest first. */
  due(nowMs: number, limit: number): AgentRecord[];
  /**
   * Up to `limit` pending records, oldest first (createdAt, then agentId), after `after` when
   * given: kept in that order as they come and go, so a page costs a binary search and the page.
   */
  pending(after: PendingCursor | undefined, limit: number): AgentRecord[];
  /** Up to `limit` pending records, newest first. */
  newestPending(limit: number): AgentRecord[];
}

interface Entry {
  /** `record.nextRunAt` in epoch ms. */
  readonly at: number;
  readonly record: AgentRecord;
}

/** Below this many entries the heap is never rebuilt. */
const MIN_REBUILD_SIZE = 1024;

export function createDueQueue(): DueQueue {
  /** keyOf(owner, agentId) -> current record, for every agent. */
  const current = new Map<string, AgentRecord>();
  /**
   * Pending agents by (createdAt, agentId). Agents become pending only when created, mostly in
   * that order, so an insert is usually an append; an activation removes one by binary search.
   */
  const pending: AgentRecord[] = [];
  const pendingKeys = new Set<string>();
  /** The index of the first pending record at or after `cursor` (strictly after with `after`). */
  const pendingIndex = (cursor: PendingCursor, after: boolean): number => {
    let low = 0;
    let high = pending.length;
    const ms = cursor.createdAt.getTime();
    while (low < high) {
      const mid = (low + high) >>> 1;
      const order = oldestFirst(pending[mid] as AgentRecord, ms, cursor.agentId);
      if (order < 0 || (after && order === 0)) low = mid + 1;
      else high = mid;
    }
    return low;
  };
  /** Agents are the store's per owner, so ids are kept apart by owner. */
  const keyOf = (owner: string, agentId: string) => `${owner}\u0000${agentId}`;
  const heap: Entry[] = [];
  let active = 0;

  const live = (entry: Entry) =>
    entry.record.status === "active" &&
    current.get(keyOf(entry.record.owner, entry.record.agentId)) === entry.record;

  function push(entry: Entry): void {
    heap.push(entry);
    let i = heap.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if ((heap[parent] as Entry).at <= entry.at) break;
      heap[i] = heap[parent] as Entry;
      i = parent;
    }
    heap[i] = entry;
  }

  function pop(): Entry | undefined {
    const top = heap[0];
    const last = heap.pop();
    if (top === undefined || last === undefined || heap.length === 0) return top;
    let i = 0;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= heap.length) break;
      const right = left + 1;
      const child =
        right < heap.length && (heap[right] as Entry).at < (heap[left] as Entry).at ? right : left;
      if ((heap[child] as Entry).at >= last.at) break;
      heap[i] = heap[child] as Entry;
      i = child;
    }
    heap[i] = last;
    return top;
  }

  /** Entries of records that changed since pile up only until they surface; bound them anyway. */
  function rebuildIfBloated(): void {
    if (heap.length < Math.max(MIN_REBUILD_SIZE, 4 * active)) return;
    const entries = heap.filter(live);
    heap.length = 0;
    for (const entry of entries) push(entry);
  }

  return {
    set(owner, agentId, record) {
      const key = keyOf(owner, agentId);
      const old = current.get(key);
      if (old?.status === "active") active--;
      if (record === undefined) current.delete(key);
      else current.set(key, record);
      const wasPending = pendingKeys.has(key);
      if (record?.status === "pending") {
        const at = pendingIndex(record, false);
        if (wasPending) pending[at] = record;
        else {
          pending.splice(at, 0, record);
          pendingKeys.add(key);
        }
      } else if (wasPending) {
        // Found by the old record: createdAt and id never change.
        pending.splice(pendingIndex(old as AgentRecord, false), 1);
        pendingKeys.delete(key);
      }
      if (record?.status !== "active") return;
      active++;
      if (record.nextRunAt !== undefined) push({ at: record.nextRunAt.getTime(), record });
      rebuildIfBloated();
    },
    due(nowMs, limit) {
      const out: AgentRecord[] = [];
      const taken: Entry[] = [];
      while (out.length < limit && heap.length > 0 && (heap[0] as Entry).at <= nowMs) {
        const entry = pop() as Entry;
        if (!live(entry)) continue;
        out.push(entry.record);
        taken.push(entry);
      }
      // Due agents stay due until a run advances them: their entries go back.
      for (const entry of taken) push(entry);
      return out;
    },
    pending: (after, limit) => {
      const from = after === undefined ? 0 : pendingIndex(after, true);
      return pending.slice(from, from + limit);
    },
    newestPending: (limit) => pending.slice(Math.max(0, pending.length - limit)).reverse(),
  };
}

/** `record` against (createdAt ms, agentId): negative when it comes first. */
function oldestFirst(record: AgentRecord, ms: number, agentId: string): number {
  const byTime = record.createdAt.getTime() - ms;
  if (byTime !== 0) return byTime;
  return record.agentId < agentId ? -1 : record.agentId > agentId ? 1 : 0;
}

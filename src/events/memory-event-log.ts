import type { EventFilter, EventLog, LoggedEvent } from "./event-log.ts";

/** The event log in memory: one process, so appending is ordering. */
export function createMemoryEventLog(): EventLog {
  const events: LoggedEvent[] = [];
  const byKey = new Map<string, LoggedEvent>();
  let last = 0;
  const matches = (e: LoggedEvent, filter: EventFilter | undefined) =>
    (filter?.owner === undefined || e.owner === filter.owner) &&
    (filter?.agentId === undefined || e.agentId === filter.agentId);
  return {
    async append(event) {
      const logged = byKey.get(event.key);
      if (logged !== undefined) return logged;
      const entry: LoggedEvent = Object.freeze({ ...event, seq: ++last });
      events.push(entry);
      byKey.set(entry.key, entry);
      return entry;
    },
    async after(seq, limit, filter) {
      // Sequence numbers are dense from the first kept one, so the start is found by arithmetic.
      const first = events[0]?.seq ?? last + 1;
      const found: LoggedEvent[] = [];
      for (let i = Math.max(0, seq + 1 - first); i < events.length && found.length < limit; i++) {
        const e = events[i] as LoggedEvent;
        if (matches(e, filter)) found.push(e);
      }
      return found;
    },
    async loggedKeys(keys) {
      return new Set(keys.filter((key) => byKey.has(key)));
    },
    async firstSeq() {
      return events[0]?.seq;
    },
    async lastSeq() {
      return last;
    },
    async prune(before) {
      let dropped = 0;
      while (events.length > 1 && (events[0] as LoggedEvent).at < before) {
        byKey.delete((events.shift() as LoggedEvent).key);
        dropped++;
      }
      return dropped;
    },
    async close() {},
  };
}

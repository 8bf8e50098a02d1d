import { OutOfRangeError, UnavailableError } from "../domain/errors.ts";
import type { SubscriberQueue } from "../streams/subscriber-queue.ts";
import type { EventFilter, EventLog, LoggedEvent } from "./event-log.ts";

/** Which events a watcher wants, and from where. */
export interface WatchRequest {
  /** The owner's events; optionally one agent's. */
  readonly filter: EventFilter & { readonly owner: string };
  /** Events after this sequence number: kept ones replayed first. Undefined: from now on. */
  readonly after?: number;
  /** Where the events go; the watcher reads it at its own pace. */
  readonly queue: SubscriberQueue<LoggedEvent>;
}

export interface EventWatch {
  /** The sequence number the watch starts after: the cursor given, or the newest event at the start. */
  readonly from: number;
  /** Stops delivering and releases everything the watch holds. */
  close(): void;
}

export interface EventFeed {
  /**
   * Starts a watch: the events matching the filter after `after`, in log order, each once.
   * Rejects with OutOfRangeError when `after` is outside the kept events (older than retention,
   * or after the newest), and UnavailableError when the log cannot be read.
   */
  watch(request: WatchRequest): Promise<EventWatch>;
  /** For leak checks: watches open, those live, and whether the poll timer exists. */
  stats(): { watches: number; live: number; timer: boolean };
  close(): void;
}

interface Watcher {
  readonly filter: WatchRequest["filter"];
  readonly queue: SubscriberQueue<LoggedEvent>;
  /** The last sequence number handed to the queue, or passed over as not this watcher's. */
  pos: number;
  closed: boolean;
}

/** Consecutive failed polls after which live watchers are told the log is unavailable. */
const FAILED_POLLS_TOLERATED = 3;

/**
 * Every watcher of a process is served by one poll of the event log (the log is shared by all
 * replicas, so events written by any replica reach watchers on every one). A new watcher first
 * reads what it missed from the log itself, at its own pace, and joins the live fan-out only once
 * it has caught up with the poller; both sides go by sequence numbers, which are dense and visible
 * as a prefix (see EventLog), so the seam between replay and live has no gap and no duplicate:
 *
 * - A replay read that returns less than a page has seen every matching event up to the poller's
 *   position taken before the read (those were visible when the poller read them).
 * - The switch to live happens in the same turn as the check that the poller has not moved past
 *   the watcher's position, so no poll can fall between them.
 * - Live delivery skips what the watcher already has (`pos`).
 */
export function createEventFeed(options: {
  readonly log: EventLog;
  readonly pollIntervalMs: number;
  /** Events read per query, replay and poll alike. */
  readonly pageSize?: number;
  readonly onError?: (error: unknown) => void;
}): EventFeed {
  const { log, pollIntervalMs } = options;
  const pageSize = options.pageSize ?? 500;
  /** Live watchers by owner, so an event costs work for its owner's watchers only. */
  const live = new Map<string, Set<Watcher>>();
  let liveCount = 0;
  const watchers = new Set<Watcher>();
  /** The poller's position: every event up to it has been delivered to live watchers. */
  let last: number | undefined;
  let timer: NodeJS.Timeout | undefined;
  let polling: Promise<void> | undefined;
  let failedPolls = 0;
  let closed = false;

  const deliver = (event: LoggedEvent) => {
    const owners = live.get(event.owner);
    if (owners === undefined) return;
    for (const w of owners) {
      if (event.seq <= w.pos) continue;
      w.pos = event.seq;
      if (w.filter.agentId !== undefined && w.filter.agentId !== event.agentId) continue;
      // A full queue ends that watcher (it fell behind); the others go on.
      if (!w.queue.offer(event)) leave(w);
    }
  };

  const pollOnce = async (): Promise<void> => {
    if (last === undefined) last = await log.lastSeq();
    for (;;) {
      const page = await log.after(last, pageSize);
      for (const event of page) {
        last = event.seq;
        deliver(event);
      }
      if (page.length < pageSize) return;
    }
  };

  const poll = (): Promise<void> => {
    polling ??= pollOnce()
      .then(
        () => {
          failedPolls = 0;
        },
        (error: unknown) => {
          options.onError?.(error);
          if (++failedPolls < FAILED_POLLS_TOLERATED) return;
          // Watchers would otherwise wait on a log nobody can read: end them, so their clients
          // reconnect (elsewhere, or later) with their cursors.
          for (const owners of live.values()) {
            for (const w of owners) {
              w.queue.fail(new UnavailableError("the event log cannot be read right now"));
              leave(w);
            }
          }
        },
      )
      .finally(() => {
        polling = undefined;
      });
    return polling;
  };

  const leave = (w: Watcher) => {
    const owners = live.get(w.filter.owner);
    if (owners?.delete(w)) {
      liveCount--;
      if (owners.size === 0) live.delete(w.filter.owner);
    }
  };

  const close = (w: Watcher) => {
    if (w.closed) return;
    w.closed = true;
    leave(w);
    watchers.delete(w);
    if (watchers.size === 0 && timer !== undefined) {
      clearInterval(timer);
      timer = undefined;
    }
  };

  /** Reads what the watcher missed, then makes it live; see the seam rules above. */
  const catchUp = async (w: Watcher): Promise<void> => {
    for (;;) {
      if (w.closed) return;
      if (last === undefined) await poll();
      const before = last ?? 0;
      const page = await log.after(w.pos, pageSize, w.filter);
      for (const event of page) {
        await w.queue.room();
        if (w.closed) return;
        w.pos = event.seq;
        if (!w.queue.offer(event)) return;
      }
      if (page.length === pageSize) continue;
      w.pos = Math.max(w.pos, before);
      if (last !== undefined && last > w.pos) continue;
      if (w.closed) return;
      const owners = live.get(w.filter.owner) ?? new Set<Watcher>();
      live.set(w.filter.owner, owners);
      owners.add(w);
      liveCount++;
      return;
    }
  };

  return {
    async watch(request) {
      if (closed) throw new UnavailableError("the server is shutting down");
      const newest = await log.lastSeq();
      let pos = newest;
      if (request.after !== undefined) {
        const first = await log.firstSeq();
        // One answer for a cursor past the newest event and one older than retention: the log is
        // every owner's, so naming its newest cursor, or answering the two cases apart (which a
        // caller could bisect on), would tell anyone how busy everyone else is.
        if (request.after > newest || request.after < (first ?? newest + 1) - 1) {
          throw new OutOfRangeError(
            `the events after cursor ${request.after} are not available: it is older than EVENT_RETENTION_HOURS or was not given out by this service; ` +
              "watch again without a cursor and read the agents' current state",
          );
        }
        pos = request.after;
      }
      const w: Watcher = { filter: request.filter, queue: request.queue, pos, closed: false };
      watchers.add(w);
      timer ??= setInterval(() => void poll(), pollIntervalMs).unref();
      catchUp(w).catch((error: unknown) => {
        request.queue.fail(error);
        close(w);
      });
      return { from: pos, close: () => close(w) };
    },
    stats: () => ({ watches: watchers.size, live: liveCount, timer: timer !== undefined }),
    close() {
      closed = true;
      for (const w of [...watchers]) close(w);
    },
  };
}

import { describe, expect, inject, it } from "vitest";
import { OutOfRangeError } from "../src/domain/errors.ts";
import { createEventFeed } from "../src/events/event-feed.ts";
import type { LoggedEvent, NewEvent } from "../src/events/event-log.ts";
import { createSubscriberQueue, IDLE, QueueOverflowError } from "../src/streams/subscriber-queue.ts";
import { useCleanups } from "./support/cleanups.ts";
import { eventLogAdapters } from "./support/event-log-adapters.ts";

const cleanup = useCleanups();
const adapters = eventLogAdapters(inject("mongoUri"), "event_feed_test", cleanup);

const OWNERS = ["alice", "bob"];
const event = (writer: number, n: number): NewEvent => ({
  type: "run.succeeded",
  owner: OWNERS[n % 2] as string,
  agentId: `agent-${n % 3}`,
  at: new Date(),
  key: `w${writer}-${n}`,
});

/** Takes `count` events from a queue, failing the test if they do not come within `ms`. */
async function takeEvents(
  queue: ReturnType<typeof createSubscriberQueue<LoggedEvent>>,
  count: number,
  ms = 20_000,
): Promise<LoggedEvent[]> {
  const seen: LoggedEvent[] = [];
  const signal = AbortSignal.timeout(ms);
  try {
    while (seen.length < count) {
      const item = await queue.take(1_000, signal);
      if (item !== IDLE) seen.push(item);
    }
  } catch (error) {
    // Say what came, so a gap can be told from a slow log.
    const seqs = seen.map((e) => e.seq).join(",");
    throw new Error(`${seen.length} of ${count} events came within ${ms} ms: ${seqs}`, { cause: error });
  }
  return seen;
}

describe.each(adapters)("event feed (%s)", (_name, make) => {
  it("replays then goes live with no gap and no duplicate while other replicas write", async () => {
    const [reader, ...writers] = await make(3);
    if (reader === undefined) throw new Error("no log");
    const feed = createEventFeed({ log: reader, pollIntervalMs: 20, pageSize: 7 });
    cleanup(async () => feed.close());
    // Some history first, so watchers can start in the middle of it.
    for (let n = 0; n < 30; n++) await reader.append(event(9, n));
    const PER_WRITER = 60;
    const writing = writers.map(async (log, w) => {
      for (let n = 0; n < PER_WRITER; n++) {
        await log.append(event(w, n));
        if (n % 10 === 0) await new Promise((resolve) => setTimeout(resolve, 5));
      }
    });
    // Watchers start while the writers write: at the start, in the history, and "from now on".
    const starts = [0, 12, 29, undefined];
    const watches = await Promise.all(
      starts.flatMap((after) =>
        OWNERS.map(async (owner) => {
          const queue = createSubscriberQueue<LoggedEvent>({ capacity: 10_000 });
          const newestBefore = await reader.lastSeq();
          const watch = await feed.watch({
            filter: { owner },
            ...(after === undefined ? {} : { after }),
            queue,
          });
          cleanup(async () => watch.close());
          // "From now on" starts after the newest event at the call, which writers keep moving:
          // the watch says where it started, and that is no earlier than the call.
          if (after === undefined) expect(watch.from).toBeGreaterThanOrEqual(newestBefore);
          else expect(watch.from).toBe(after);
          return { owner, from: watch.from, queue };
        }),
      ),
    );
    await Promise.all(writing);
    const all = await reader.after(0, 10_000);
    expect(all.map((e) => e.seq)).toEqual(all.map((_, i) => i + 1));
    for (const { owner, from, queue } of watches) {
      const expected = all.filter((e) => e.owner === owner && e.seq > from).map((e) => e.key);
      const seen = await takeEvents(queue, expected.length);
      expect(seen.map((e) => e.key)).toEqual(expected);
      // And nothing more: no duplicate arrives later.
      expect(await queue.take(300, AbortSignal.timeout(5_000))).toBe(IDLE);
    }
  });

  it("filters by agent within the owner", async () => {
    const [log] = await make(1);
    if (log === undefined) throw new Error("no log");
    const feed = createEventFeed({ log, pollIntervalMs: 20 });
    cleanup(async () => feed.close());
    const queue = createSubscriberQueue<LoggedEvent>({ capacity: 100 });
    const watch = await feed.watch({ filter: { owner: "alice", agentId: "agent-0" }, after: 0, queue });
    cleanup(async () => watch.close());
    for (let n = 0; n < 24; n++) await log.append(event(0, n));
    // n % 2 == 0 (alice) and n % 3 == 0 (agent-0): n = 0, 6, 12, 18.
    const seen = await takeEvents(queue, 4);
    expect(seen.map((e) => e.key)).toEqual(["w0-0", "w0-6", "w0-12", "w0-18"]);
  });

  it("refuses cursors outside the kept events with out_of_range", async () => {
    const [log] = await make(1);
    if (log === undefined) throw new Error("no log");
    const feed = createEventFeed({ log, pollIntervalMs: 20 });
    cleanup(async () => feed.close());
    const queue = () => createSubscriberQueue<LoggedEvent>({ capacity: 10 });
    for (let n = 0; n < 5; n++) {
      await log.append({ ...event(0, n), at: new Date(Date.UTC(2026, 0, 1, 0, 0, n)) });
    }
    await expect(feed.watch({ filter: { owner: "alice" }, after: 6, queue: queue() })).rejects.toThrow(
      OutOfRangeError,
    );
    // Events 1..3 go; the cursor 1 would need event 2, which is gone. 3 (the last dropped) still works.
    expect(await log.prune(new Date(Date.UTC(2026, 0, 1, 0, 0, 3)))).toBe(3);
    await expect(feed.watch({ filter: { owner: "alice" }, after: 1, queue: queue() })).rejects.toThrow(
      /older than EVENT_RETENTION_HOURS/,
    );
    const watch = await feed.watch({ filter: { owner: "alice" }, after: 3, queue: queue() });
    watch.close();
  });

  it("tells a cursor too old from one never given out in the same words, naming no other cursor", async () => {
    const [log] = await make(1);
    if (log === undefined) throw new Error("no log");
    const feed = createEventFeed({ log, pollIntervalMs: 20 });
    cleanup(async () => feed.close());
    const queue = () => createSubscriberQueue<LoggedEvent>({ capacity: 10 });
    // Other owners' activity: 37 events, the newest cursor 37, of which 1..20 are past retention.
    for (let n = 0; n < 37; n++) {
      await log.append({ ...event(0, n), owner: "bob", at: new Date(Date.UTC(2026, 0, 1, 0, 0, n)) });
    }
    expect(await log.prune(new Date(Date.UTC(2026, 0, 1, 0, 0, 20)))).toBe(20);
    const refusal = async (after: number) => {
      const error = await feed.watch({ filter: { owner: "alice" }, after, queue: queue() }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(OutOfRangeError);
      return (error as Error).message;
    };
    const tooOld = await refusal(5);
    const future = await refusal(1000);
    // The newest cursor (37), the oldest kept (21) and the volume pruned are named nowhere, and
    // the two cases read alike, so no caller can bisect its way to another owner's volume.
    for (const message of [tooOld, future]) expect(message).not.toMatch(/\b(37|36|21|20)\b/);
    expect(tooOld.replace("cursor 5 ", "cursor N ")).toBe(future.replace("cursor 1000 ", "cursor N "));
  });

  it("ends a watcher that falls behind, and only that one", async () => {
    const [log] = await make(1);
    if (log === undefined) throw new Error("no log");
    const feed = createEventFeed({ log, pollIntervalMs: 20 });
    cleanup(async () => feed.close());
    const slow = createSubscriberQueue<LoggedEvent>({ capacity: 3 });
    const fast = createSubscriberQueue<LoggedEvent>({ capacity: 100 });
    const watches = [
      await feed.watch({ filter: { owner: "alice" }, queue: slow }),
      await feed.watch({ filter: { owner: "alice" }, queue: fast }),
    ];
    cleanup(async () => {
      for (const w of watches) w.close();
    });
    // Both live (caught up), so what follows is the live fan-out, which never waits for a reader.
    while (feed.stats().live < 2) await new Promise((resolve) => setTimeout(resolve, 5));
    for (let n = 0; n < 20; n += 2) await log.append(event(0, n));
    expect((await takeEvents(fast, 10)).length).toBe(10);
    // The slow one holds its three, then learns it fell behind.
    const held = await takeEvents(slow, 3);
    expect(held.map((e) => e.key)).toEqual(["w0-0", "w0-2", "w0-4"]);
    await expect(slow.take(1_000, AbortSignal.timeout(5_000))).rejects.toThrow(QueueOverflowError);
  });

  it("a replaying watcher is paced by its reader instead of ending", async () => {
    const [log] = await make(1);
    if (log === undefined) throw new Error("no log");
    for (let n = 0; n < 40; n += 2) await log.append(event(0, n));
    const feed = createEventFeed({ log, pollIntervalMs: 20, pageSize: 4 });
    cleanup(async () => feed.close());
    const queue = createSubscriberQueue<LoggedEvent>({ capacity: 3 });
    const watch = await feed.watch({ filter: { owner: "alice" }, after: 0, queue });
    cleanup(async () => watch.close());
    const seen = await takeEvents(queue, 20);
    expect(seen.map((e) => e.seq)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
  });

  it("holds nothing once its watches close, after 1,000 open and close cycles", async () => {
    const [log] = await make(1);
    if (log === undefined) throw new Error("no log");
    const feed = createEventFeed({ log, pollIntervalMs: 20 });
    cleanup(async () => feed.close());
    await log.append(event(0, 0));
    for (let i = 0; i < 1_000; i++) {
      const queue = createSubscriberQueue<LoggedEvent>({ capacity: 10 });
      const watch = await feed.watch({ filter: { owner: OWNERS[i % 2] as string }, after: 0, queue });
      // Some close after their first event (alice has one), others at once, mid-replay.
      if (i % 4 === 0) expect(await queue.take(5_000, AbortSignal.timeout(5_000))).not.toBe(IDLE);
      watch.close();
    }
    // Replays still in flight notice the close on their next step.
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(feed.stats()).toEqual({ watches: 0, live: 0, timer: false });
  });
});

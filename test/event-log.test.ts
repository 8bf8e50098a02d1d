import { describe, expect, inject, it } from "vitest";
import type { EventLog, NewEvent } from "../src/events/event-log.ts";
import { useCleanups } from "./support/cleanups.ts";
import { eventLogAdapters } from "./support/event-log-adapters.ts";

const cleanup = useCleanups();
const adapters = eventLogAdapters(inject("mongoUri"), "event_log_test", cleanup);

const event = (n: number, overrides: Partial<NewEvent> = {}): NewEvent => ({
  type: "run.succeeded",
  owner: "alice",
  agentId: `agent-${n % 3}`,
  at: new Date(Date.UTC(2026, 10, 1, 0, 0, n)),
  key: `key-${n}`,
  ...overrides,
});

describe.each(adapters)("event log (%s)", (_name, make) => {
  it("numbers events 1, 2, 3 ... and keeps what was appended", async () => {
    const [log] = (await make(1)) as [EventLog];
    expect(await log.lastSeq()).toBe(0);
    expect(await log.firstSeq()).toBeUndefined();
    const logged = [];
    for (let n = 1; n <= 5; n++) logged.push(await log.append(event(n, { data: { n } })));
    expect(logged.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5]);
    expect(await log.after(0, 100)).toEqual(logged);
    expect(logged[2]).toEqual({ ...event(3, { data: { n: 3 } }), seq: 3 });
    expect(await log.lastSeq()).toBe(5);
    expect(await log.firstSeq()).toBe(1);
  });

  it("a key appended again is the event already logged, not a second one", async () => {
    const [log] = (await make(1)) as [EventLog];
    const first = await log.append(event(1));
    await log.append(event(2));
    const again = await log.append(event(1, { type: "something else" }));
    expect(again).toEqual(first);
    expect((await log.after(0, 100)).map((e) => e.key)).toEqual(["key-1", "key-2"]);
  });

  it("reads after a cursor, a page at a time, by owner and by agent", async () => {
    const [log] = (await make(1)) as [EventLog];
    for (let n = 1; n <= 12; n++) await log.append(event(n, { owner: n % 2 === 0 ? "bob" : "alice" }));
    expect((await log.after(4, 3)).map((e) => e.seq)).toEqual([5, 6, 7]);
    expect((await log.after(0, 100, { owner: "bob" })).map((e) => e.seq)).toEqual([2, 4, 6, 8, 10, 12]);
    expect((await log.after(3, 100, { owner: "alice", agentId: "agent-1" })).map((e) => e.seq)).toEqual([7]);
    expect(await log.after(12, 100)).toEqual([]);
  });

  it("prunes events older than a time, never the last one, and numbers on from there", async () => {
    const [log] = (await make(1)) as [EventLog];
    for (let n = 1; n <= 4; n++) await log.append(event(n));
    expect(await log.prune(new Date(Date.UTC(2026, 10, 1, 0, 0, 3)))).toBe(2);
    expect(await log.firstSeq()).toBe(3);
    expect(await log.prune(new Date(Date.UTC(2027, 0, 1)))).toBe(1);
    expect((await log.after(0, 100)).map((e) => e.seq)).toEqual([4]);
    expect((await log.append(event(5))).seq).toBe(5);
  });

  it("under concurrent writers in separate clients, a reader by cursor sees every event once, in order, none skipped", async () => {
    const replicas = 3;
    const perWriter = 40;
    const writersPerReplica = 4;
    const logs = await make(replicas + 1);
    const reader = logs[replicas] as EventLog;
    const seen: number[] = [];
    let writing = true;
    const read = (async () => {
      let cursor = 0;
      for (;;) {
        const done = !writing;
        const page = await reader.after(cursor, 50);
        for (const e of page) {
          // Prefix visibility: the next event after the cursor is always cursor + 1.
          expect(e.seq).toBe(cursor + 1);
          seen.push(e.seq);
          cursor = e.seq;
        }
        if (done && page.length === 0) return;
        if (page.length === 0) await new Promise((r) => setTimeout(r, 2));
      }
    })();
    const keys = new Set<string>();
    await Promise.all(
      logs.slice(0, replicas).flatMap((log, r) =>
        Array.from({ length: writersPerReplica }, async (_, w) => {
          for (let i = 0; i < perWriter; i++) {
            const key = `r${r}-w${w}-${i}`;
            keys.add(key);
            await log.append(event(i, { key }));
          }
        }),
      ),
    );
    writing = false;
    await read;
    const total = replicas * writersPerReplica * perWriter;
    expect(seen).toEqual(Array.from({ length: total }, (_, i) => i + 1));
    const all = await reader.after(0, total + 10);
    expect(new Set(all.map((e) => e.key))).toEqual(keys);
  }, 60_000);
});

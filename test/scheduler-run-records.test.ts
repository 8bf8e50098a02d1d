/**
 * Run records alone, on the memory run store: each attempt's record as the history keeps it, stored
 * under the slot's lease and told once stored; an attempt recorded under a lost lease is told to no one.
 */
import { describe, expect, it } from "vitest";
import { createMemoryRunStore } from "../src/scheduler/memory-run-store.ts";
import { type Lease, type RunRecord, runIdOf, type SlotRef } from "../src/scheduler/run-store.ts";
import { createRunRecords } from "../src/scheduler/stages/run-records.ts";
import { hourlyAgent, slot } from "./support/stage-agents.ts";

const LEASE_MS = 30_000;

function setUp() {
  const runs = createMemoryRunStore();
  const told: { run: RunRecord; lagMs: number; worker: string }[] = [];
  const finished: RunRecord[] = [];
  const records = createRunRecords({
    runs,
    worker: "w1",
    onRun: (run, lagMs, worker) => told.push({ run, lagMs, worker }),
    runEvents: { finished: async (run) => void finished.push(run) },
  });
  const agent = hourlyAgent();
  const ref: SlotRef = { agentId: agent.agentId, owner: agent.owner, scheduledAt: slot(1) };
  const at = (ms: number) => new Date(slot(1).getTime() + ms);
  const claim = async (worker: string, nowMs: number) =>
    (await runs.claim(ref, { worker, now: at(nowMs), leaseMs: LEASE_MS })) as Lease;
  return { runs, records, told, finished, ref, at, claim };
}

describe("run records", () => {
  it("records an attempt's outcome: succeeded with its result, skipped, or failed with its error", () => {
    const { records, ref, at } = setUp();
    const attempt = (outcome: Parameters<typeof records.of>[0]["outcome"]) =>
      records.of({ slot: ref, attempt: 2, startedAt: at(100), finishedAt: at(400), outcome });
    expect(attempt({ ok: true, result: { signature: "s" } })).toEqual({
      runId: runIdOf(ref, 2),
      agentId: ref.agentId,
      owner: ref.owner,
      scheduledAt: ref.scheduledAt,
      attempt: 2,
      startedAt: at(100),
      finishedAt: at(400),
      outcome: "succeeded",
      result: { signature: "s" },
    });
    expect(attempt({ ok: true, result: { why: "price" }, skipped: true })).toMatchObject({
      outcome: "skipped",
      result: { why: "price" },
    });
    const failed = attempt({ ok: false, error: "boom", retryable: true });
    expect(failed).toMatchObject({ outcome: "failed", error: "boom" });
    expect(failed).not.toHaveProperty("result");
  });

  it("stores a run under the slot's lease and tells of it, with the schedule lag", async () => {
    const { runs, records, told, finished, ref, at, claim } = setUp();
    const lease = await claim("w1", 0);
    const run = records.of({
      slot: ref,
      attempt: 1,
      startedAt: at(250),
      finishedAt: at(900),
      outcome: { ok: true, result: {} },
    });
    expect(await records.record(lease, run, { settles: true })).toBe(true);
    expect(await runs.settled(ref)).toEqual(run);
    expect(told).toEqual([{ run, lagMs: 250, worker: "w1" }]);
    expect(finished).toEqual([run]);
  });

  it("tells no one of a run whose lease was taken over", async () => {
    const { runs, records, told, finished, ref, at, claim } = setUp();
    const stalled = await claim("w1", 0);
    const taker = await claim("w2", 2 * LEASE_MS);
    expect(taker.generation).toBe(1);
    const late = at(2 * LEASE_MS + 10);
    const run = records.of({
      slot: ref,
      attempt: 1,
      startedAt: at(0),
      finishedAt: late,
      outcome: { ok: true, result: {} },
    });
    expect(await records.record(stalled, run, { settles: true })).toBe(false);
    expect(await runs.settled(ref)).toBeUndefined();
    expect(told).toEqual([]);
    expect(finished).toEqual([]);
  });
});

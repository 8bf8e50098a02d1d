/**
 * The slot journal alone, on the memory stores: the transactions signed for a slot, kept under the
 * newest lease (a taker sees what an earlier holder kept), none kept once the lease is lost, and the
 * agent's earlier successes on the slot's UTC day.
 */
import { describe, expect, it } from "vitest";
import type { AgentRecord } from "../src/agent/agent-store.ts";
import { createMemoryAgentStore } from "../src/agent/memory-agent-store.ts";
import { createMemoryRunStore } from "../src/scheduler/memory-run-store.ts";
import type { Lease, RunStore, SlotRef } from "../src/scheduler/run-store.ts";
import { createSlotJournal } from "../src/scheduler/stages/slot-journal.ts";
import { HOUR, hourlyAgent, slot } from "./support/stage-agents.ts";

const LEASE_MS = 30_000;
const sent = (signature: string) => ({
  signature,
  lastValidBlockHeight: 100n,
  transaction: `tx-${signature}`,
});

function journalOf(runs: RunStore, agent: AgentRecord, lease: { current: Lease | undefined }, nowMs: number) {
  return createSlotJournal({
    runs,
    agent,
    first: lease.current as Lease,
    lease: () => lease.current,
    slotBefore: (_agent, at) => new Date(at.getTime() - HOUR),
    now: () => new Date(nowMs),
  });
}

describe("slot journal", () => {
  it("keeps what a holder signs, and a taker finds it", async () => {
    const runs = createMemoryRunStore();
    const agent = hourlyAgent();
    const ref: SlotRef = { agentId: agent.agentId, owner: agent.owner, scheduledAt: slot(1) };
    const t = slot(1).getTime();
    const first = { current: await runs.claim(ref, { worker: "w1", now: new Date(t), leaseMs: LEASE_MS }) };
    const journal = journalOf(runs, agent, first, t + 10);
    expect(await journal.transactions()).toEqual([]);
    expect(await journal.record(sent("a"))).toBe(true);
    expect(await journal.transactions()).toEqual([
      { ...sent("a"), generation: 0, recordedAt: new Date(t + 10) },
    ]);

    // The first holder stalls past its lease; another replica takes the slot over.
    const taker = {
      current: await runs.claim(ref, { worker: "w2", now: new Date(t + 2 * LEASE_MS), leaseMs: LEASE_MS }),
    };
    expect(taker.current?.generation).toBe(1);
    const taken = journalOf(runs, agent, taker, t + 2 * LEASE_MS + 10);
    expect((await taken.transactions()).map((s) => s.signature)).toEqual(["a"]);
    // The stalled holder is fenced off: what it still signs is not its to send.
    expect(await journal.record(sent("b"))).toBe(false);
    expect(await taken.record(sent("c"))).toBe(true);
    expect((await taken.transactions()).map((s) => [s.signature, s.generation])).toEqual([
      ["a", 0],
      ["c", 1],
    ]);
  });

  it("keeps nothing once its lease is lost", async () => {
    const runs = createMemoryRunStore();
    const agent = hourlyAgent();
    const ref: SlotRef = { agentId: agent.agentId, owner: agent.owner, scheduledAt: slot(1) };
    const lease = { current: await runs.claim(ref, { worker: "w1", now: slot(1), leaseMs: LEASE_MS }) };
    const journal = journalOf(runs, agent, lease, slot(1).getTime());
    lease.current = undefined;
    expect(await journal.record(sent("a"))).toBe(false);
    expect(await runs.transactions(ref)).toEqual([]);
    expect(await journal.stillWanted?.()).toBe(false);
  });

  it("tells the day's earlier successes, and hands them to the settling run", async () => {
    const runs = createMemoryRunStore();
    const agent = hourlyAgent({ nextRunAt: slot(2) });
    const earlier: SlotRef = { agentId: agent.agentId, owner: agent.owner, scheduledAt: slot(1) };
    const held = (await runs.claim(earlier, { worker: "w1", now: slot(1), leaseMs: LEASE_MS })) as Lease;
    const finishedAt = new Date(slot(1).getTime() + 1_000);
    const run = {
      runId: "r1",
      ...earlier,
      attempt: 1,
      startedAt: slot(1),
      finishedAt,
      outcome: "succeeded" as const,
      result: {},
    };
    expect(await runs.record(held, run, { now: finishedAt, settles: true })).toBe("recorded");

    const ref: SlotRef = { ...earlier, scheduledAt: slot(2) };
    const lease = { current: await runs.claim(ref, { worker: "w1", now: slot(2), leaseMs: LEASE_MS }) };
    const ranToday = journalOf(runs, { ...agent, lastRunAt: finishedAt }, lease, slot(2).getTime());
    expect(ranToday.dayBefore()).toBeUndefined();
    expect(await ranToday.succeededToday()).toEqual([run]);
    expect(await ranToday.dayBefore()).toEqual([run]);
    // An agent whose last run finished before the slot's day began ran nothing on it.
    const ranYesterday = journalOf(
      runs,
      { ...agent, lastRunAt: new Date(slot(1).getTime() - 24 * HOUR) },
      lease,
      0,
    );
    expect(await ranYesterday.succeededToday()).toEqual([]);
  });

  it("says whether the agent is still wanted, as the store has it now", async () => {
    const runs = createMemoryRunStore();
    const agents = createMemoryAgentStore();
    const agent = hourlyAgent();
    await agents.create({ record: agent });
    const ref: SlotRef = { agentId: agent.agentId, owner: agent.owner, scheduledAt: slot(1) };
    const lease = { current: await runs.claim(ref, { worker: "w1", now: slot(1), leaseMs: LEASE_MS }) };
    const journal = createSlotJournal({
      runs,
      agent,
      first: lease.current as Lease,
      lease: () => lease.current,
      slotBefore: () => undefined,
      get: agents.get,
      now: () => slot(1),
    });
    expect(await journal.stillWanted?.()).toBe(true);
    await agents.update(agent.owner, agent.agentId, () => ({ status: "paused", nextRunAt: null }));
    expect(await journal.stillWanted?.()).toBe(false);
  });
});

/**
 * Finding due slots and claiming them, alone, on the memory stores: what a poll finds runnable, what
 * it leaves (running here, held by another replica, ended here, settled a moment ago), and what a
 * failed claim teaches it.
 */
import { describe, expect, it } from "vitest";
import type { AgentRecord } from "../src/agent/agent-store.ts";
import { createMemoryAgentStore } from "../src/agent/memory-agent-store.ts";
import { CLOCK_SKEW_ALLOWANCE_MS } from "../src/domain/clock-skew.ts";
import { createMemoryRunStore } from "../src/scheduler/memory-run-store.ts";
import type { Lease, RunRecord, SlotRef } from "../src/scheduler/run-store.ts";
import {
  createDueSlots,
  type DuePoll,
  SETTLED_GRACE_MS,
  slotKeyOf,
} from "../src/scheduler/stages/due-slots.ts";
import { createSlotClaims } from "../src/scheduler/stages/slot-claims.ts";
import { hourlyAgent, slot } from "./support/stage-agents.ts";

const LEASE_MS = 30_000;
const RENEW_MS = 10_000;

async function setUp(count: number) {
  const agents = createMemoryAgentStore();
  const runs = createMemoryRunStore();
  const due = Array.from({ length: count }, () => hourlyAgent());
  for (const record of due) await agents.create({ record });
  const dueSlots = createDueSlots({
    agents,
    leaseMs: LEASE_MS,
    renewEveryMs: RENEW_MS,
    reuseMs: 60_000,
    random: Math.random,
  });
  const advanced: [AgentRecord, RunRecord][] = [];
  const takenOver: SlotRef[] = [];
  const claimsOf = (worker: string, nowMs: () => number) =>
    createSlotClaims({
      runs,
      worker,
      leaseMs: LEASE_MS,
      now: () => new Date(nowMs()),
      dueSlots,
      advance: async (agent, run) => void advanced.push([agent, run]),
      onTakeover: (ref) => takenOver.push(ref),
    });
  return { agents, runs, due, dueSlots, advanced, takenOver, claimsOf };
}

/** A poll at `nowMs` with room for `free` runs, nothing running, no backlog. */
const pollAt = (nowMs: number, fields: Partial<DuePoll> = {}) =>
  [
    { nowMs, realMs: performance.now() },
    {
      running: new Map(),
      free: 4,
      leftForUpstreams: 0,
      backlog: false,
      alongside: Promise.resolve(),
      ...fields,
    },
  ] as const;
const ids = (agents: readonly AgentRecord[]) => agents.map((a) => a.agentId).sort();
const keyOf = (agent: AgentRecord) => slotKeyOf(agent.agentId, agent.nextRunAt as Date);

describe("due slots", () => {
  it("finds the due agents, in a window a few times the free runs, but those running here", async () => {
    const { due, dueSlots } = await setUp(3);
    const t = slot(1).getTime();
    expect((await dueSlots.find(...pollAt(t - 1))).runnable).toEqual([]);
    const found = await dueSlots.find(...pollAt(t, { free: 1 }));
    expect(ids(found.runnable)).toEqual(ids(due));
    expect(found.window).toBe(8);
    expect(found.reused).toBe(false);
    const running = new Map([[due[0]?.agentId as string, {}]]);
    expect(ids((await dueSlots.find(...pollAt(t, { running }))).runnable)).toEqual(ids(due.slice(1)));
  });

  it("leaves a slot held by another replica until that lease could have run out, then every renewal", async () => {
    const { due, dueSlots, claimsOf } = await setUp(1);
    const agent = due[0] as AgentRecord;
    let now = slot(1).getTime();
    expect(await claimsOf("w1", () => now).claim(agent, slot(1), now)).toMatchObject({ generation: 0 });
    const w2 = claimsOf("w2", () => now);
    expect(await w2.claim(agent, slot(1), now)).toBeUndefined();
    const firstMiss = now;
    now = firstMiss + LEASE_MS + CLOCK_SKEW_ALLOWANCE_MS - 1;
    expect((await dueSlots.find(...pollAt(now))).runnable).toEqual([]);
    now += 1;
    expect(ids((await dueSlots.find(...pollAt(now))).runnable)).toEqual([agent.agentId]);
    // Still held (w1 renewed meanwhile, as far as this replica can tell): looked at again a renewal later.
    dueSlots.heldElsewhere(keyOf(agent), now);
    expect((await dueSlots.find(...pollAt(now + RENEW_MS - 1))).runnable).toEqual([]);
    expect(ids((await dueSlots.find(...pollAt(now + RENEW_MS))).runnable)).toEqual([agent.agentId]);
  });

  it("takes over a slot whose holder's lease ran out, and says so", async () => {
    const { due, claimsOf, takenOver } = await setUp(1);
    const agent = due[0] as AgentRecord;
    const t = slot(1).getTime();
    await claimsOf("w1", () => t).claim(agent, slot(1), t);
    const later = t + LEASE_MS + CLOCK_SKEW_ALLOWANCE_MS;
    const lease = await claimsOf("w2", () => later).claim(agent, slot(1), later);
    expect(lease).toMatchObject({ generation: 1, worker: "w2" });
    expect(takenOver).toEqual([{ agentId: agent.agentId, owner: agent.owner, scheduledAt: slot(1) }]);
  });

  it("leaves a slot settled a moment ago to its holder, and repairs it once the holder had time enough", async () => {
    const { due, runs, dueSlots, claimsOf, advanced } = await setUp(2);
    const [recent, old] = due as [AgentRecord, AgentRecord];
    const t = slot(1).getTime();
    const settle = async (agent: AgentRecord, finishedMs: number) => {
      const ref = { agentId: agent.agentId, owner: agent.owner, scheduledAt: slot(1) };
      const lease = (await runs.claim(ref, { worker: "w1", now: new Date(t), leaseMs: LEASE_MS })) as Lease;
      const finishedAt = new Date(finishedMs);
      const run: RunRecord = {
        runId: `r-${agent.agentId}`,
        ...ref,
        attempt: 1,
        startedAt: new Date(t),
        finishedAt,
        outcome: "succeeded",
      };
      await runs.record(lease, run, { now: finishedAt, settles: true });
      return run;
    };
    const now = t + 20_000;
    const oldRun = await settle(old, now - SETTLED_GRACE_MS);
    const recentRun = await settle(recent, now - 1);
    const w2 = claimsOf("w2", () => now);
    expect(await w2.claim(old, slot(1), now)).toBeUndefined();
    expect(advanced).toEqual([[old, oldRun]]);
    expect(await w2.claim(recent, slot(1), now)).toBeUndefined();
    expect(advanced).toHaveLength(1);
    // The recent one is neither claimed again nor repaired until its grace is over.
    const soon = await dueSlots.find(...pollAt(now + SETTLED_GRACE_MS - 2));
    expect(soon.stranded.map(([a]) => a.agentId)).toEqual([]);
    expect(soon.runnable.map((a) => a.agentId)).not.toContain(recent.agentId);
    const later = await dueSlots.find(...pollAt(now + SETTLED_GRACE_MS));
    expect(later.stranded).toEqual([[recent, recentRun]]);
  });

  it("does not run a slot again that ended here, until a look begun after the end", async () => {
    const { due, dueSlots } = await setUp(1);
    const agent = due[0] as AgentRecord;
    const t = slot(1).getTime();
    await dueSlots.find(...pollAt(t));
    dueSlots.ended(keyOf(agent));
    expect(dueSlots.endedHere(keyOf(agent))).toBe(true);
    // A backlog's poll reuses the answer had before the run ended: it still shows the agent there.
    const reused = await dueSlots.find(...pollAt(t + 10, { backlog: true }));
    expect(reused.reused).toBe(true);
    expect(reused.runnable).toEqual([]);
    // A fresh look tells: the store would have the agent moved on.
    await dueSlots.find(...pollAt(t + 10));
    expect(dueSlots.endedHere(keyOf(agent))).toBe(false);
  });

  it("reuses a recent answer while a backlog drains, and asks again once it is used up", async () => {
    const { agents, due, dueSlots } = await setUp(2);
    const t = slot(1).getTime();
    const first = await dueSlots.find(...pollAt(t));
    const newcomer = hourlyAgent();
    await agents.create({ record: newcomer });
    const reused = await dueSlots.find(...pollAt(t + 10, { backlog: true }));
    expect(reused.reused).toBe(true);
    expect(ids(reused.runnable)).toEqual(ids(due));
    dueSlots.handled(reused, reused.runnable.length);
    const fresh = await dueSlots.find(...pollAt(t + 20, { backlog: true }));
    expect(fresh.reused).toBe(false);
    expect(ids(fresh.runnable)).toEqual(ids([...due, newcomer]));
    expect(first.reused).toBe(false);
  });
});

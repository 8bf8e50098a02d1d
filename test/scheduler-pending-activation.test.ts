/**
 * Activation of pending agents alone, on the memory stores: an agent that can run is activated at
 * its first slot (or the first after now, when it waited long), one that cannot fails with why, one
 * still waiting stays pending until it waited too long, and replicas sharing check claims check
 * each agent once.
 */
import { describe, expect, it } from "vitest";
import type { AgentRecord } from "../src/agent/agent-store.ts";
import { createMemoryAgentStore } from "../src/agent/memory-agent-store.ts";
import { createMemoryCheckClaims } from "../src/scheduler/check-claims.ts";
import { createScheduleClock } from "../src/scheduler/schedule-clock.ts";
import { createAgentSlots } from "../src/scheduler/stages/agent-slots.ts";
import {
  activationOf,
  createPendingActivation,
  type PendingActivationOptions,
} from "../src/scheduler/stages/pending-activation.ts";
import { HOUR, hourlyAgent, slot, T0 } from "./support/stage-agents.ts";

const slots = createAgentSlots({ clock: createScheduleClock({ scale: 1 }) });
const pending = (fields: Partial<AgentRecord> = {}) => hourlyAgent({ status: "pending", ...fields });
const look = () => ({ realMs: performance.now(), nowMs: Date.now(), tookMs: 0 });

async function setUp(records: readonly AgentRecord[], fields: Partial<PendingActivationOptions> = {}) {
  const agents = createMemoryAgentStore();
  for (const record of records) await agents.create({ record });
  const told: [string, string, string | undefined][] = [];
  let nowMs = slot(1).getTime() - 1;
  const activation = createPendingActivation({
    agents,
    slots,
    checkRunnable: async () => undefined,
    stopping: () => false,
    now: () => new Date(nowMs),
    onStatus: (agent, status, reason) => told.push([agent.agentId, status, reason]),
    ...fields,
  });
  const statusOf = async (agent: AgentRecord) => agents.get(agent.owner, agent.agentId);
  return { agents, activation, told, statusOf, setNow: (ms: number) => (nowMs = ms) };
}

describe("pending activation", () => {
  it("activates an agent that can run at its first slot, one period after its creation", async () => {
    const agent = pending();
    const { activation, told, statusOf } = await setUp([agent]);
    await activation.round(look());
    expect(await statusOf(agent)).toMatchObject({ status: "active", nextRunAt: slot(1) });
    expect(told).toEqual([[agent.agentId, "active", undefined]]);
    expect([...activation.byOwner()]).toEqual([]);
  });

  it("starts an agent activated long after its first slot at the first slot after now", () => {
    const agent = pending();
    expect(activationOf(agent, undefined, slot(1).getTime() + 60_000, slots)?.nextRunAt).toEqual(slot(1));
    expect(activationOf(agent, undefined, slot(3).getTime() + 1, slots)?.nextRunAt).toEqual(slot(4));
    expect(activationOf({ ...agent, status: "active" }, undefined, 0, slots)).toBeUndefined();
  });

  it("fails an agent that cannot run, saying why", async () => {
    const agent = pending();
    const { activation, told, statusOf } = await setUp([agent], {
      checkRunnable: async () => "no such mint",
    });
    await activation.round(look());
    expect(await statusOf(agent)).toMatchObject({ status: "failed", failureReason: "no such mint" });
    expect((await statusOf(agent))?.nextRunAt).toBeUndefined();
    expect(told).toEqual([[agent.agentId, "failed", "no such mint"]]);
  });

  it("leaves an agent waiting for its approval pending, and fails it once it waited too long", async () => {
    const agent = pending();
    const { activation, told, statusOf, setNow } = await setUp([agent], {
      awaitReady: async (waiting) => waiting.map(() => "the owner's approval"),
      readyWaitMs: 2 * HOUR,
    });
    await activation.round(look());
    expect(await statusOf(agent)).toMatchObject({ status: "pending" });
    expect(told).toEqual([]);
    setNow(T0.getTime() + 2 * HOUR);
    await activation.round(look());
    const reason = "it was still waiting after 2 hours for the owner's approval";
    expect(await statusOf(agent)).toMatchObject({ status: "failed", failureReason: reason });
    expect(told).toEqual([[agent.agentId, "failed", reason]]);
  });

  it("checks each agent once for replicas that share the claims of checks", async () => {
    const records = [pending(), pending(), pending()];
    const checkClaims = createMemoryCheckClaims();
    const checked: string[] = [];
    const checkRunnable = async (agent: AgentRecord) => {
      checked.push(agent.agentId);
      return undefined;
    };
    const a = await setUp(records, {
      checkClaims,
      checkRunnable,
      awaitReady: async (w) => w.map(() => "approval"),
    });
    const b = createPendingActivation({
      agents: a.agents,
      slots,
      checkRunnable,
      checkClaims,
      awaitReady: async (w) => w.map(() => "approval"),
      stopping: () => false,
      now: () => new Date(slot(1).getTime() - 1),
    });
    await Promise.all([a.activation.round(look()), b.round(look())]);
    expect(checked.sort()).toEqual(records.map((r) => r.agentId).sort());
  });

  it("forgets a noted agent the store no longer has, once it is checked", async () => {
    const agent = pending();
    const { activation, statusOf } = await setUp([]);
    activation.note(agent);
    expect([...activation.byOwner()]).toEqual([[agent]]);
    activation.checkSoon([agent.agentId], "cause-1");
    await activation.quiet();
    expect(await statusOf(agent)).toBeUndefined();
    expect([...activation.byOwner()]).toEqual([]);
  });

  it("activates a noted agent when its change is heard of", async () => {
    const agent = pending();
    const { activation, statusOf } = await setUp([agent]);
    activation.note(agent);
    activation.checkSoon([agent.agentId, "not-pending-here"], "account-changed@1");
    await activation.quiet();
    expect(await statusOf(agent)).toMatchObject({ status: "active", nextRunAt: slot(1) });
  });
});

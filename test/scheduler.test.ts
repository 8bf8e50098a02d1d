/**
 * The scheduler in-process: several replicas (schedulers with their own worker names) share the
 * stores, time is injected, and nothing waits for a schedule. Exactly once is checked from the run
 * history: every (agent, slot) has one succeeded run, none missing, none twice.
 */
import { describe, expect, it } from "vitest";
import type { JsonObject } from "../src/agent/agent-store.ts";
import type { Executor } from "../src/scheduler/executor.ts";
import { createMemoryRunStore } from "../src/scheduler/memory-run-store.ts";
import type { RunRecord, RunStore } from "../src/scheduler/run-store.ts";
import { createScheduleClock } from "../src/scheduler/schedule-clock.ts";
import {
  createScheduler,
  type SchedulableAgent,
  type ScheduledAgents,
  type Scheduler,
  type SchedulerOptions,
} from "../src/scheduler/scheduler.ts";
import { createSimulatedExecutor } from "../src/scheduler/simulated-executor.ts";
import { slotAt } from "../src/scheduler/slots.ts";
import { createCatalogTokenSource } from "../src/token/catalog-token-source.ts";

const HOUR = 3_600_000;
const T0 = new Date("2031-06-01T00:00:00.000Z");
const tokens = createCatalogTokenSource();

function movableClock(start: Date) {
  let current = start.getTime();
  return {
    now: () => new Date(current),
    advance: (ms: number) => (current += ms),
    set: (d: Date) => (current = d.getTime()),
  };
}

/** Agents in a map, with the versioned update the stores provide. */
function mapAgents(): ScheduledAgents & { all: Map<string, SchedulableAgent & { failureReason?: string }> } {
  const all = new Map<string, SchedulableAgent & { failureReason?: string }>();
  return {
    all,
    async due(now, limit) {
      return [...all.values()]
        .filter(
          (a) =>
            a.status === "pending" ||
            (a.status === "active" && (a.nextRunAt?.getTime() ?? Infinity) <= now.getTime()),
        )
        .slice(0, limit);
    },
    async update(_owner, agentId, change) {
      const current = all.get(agentId);
      if (current === undefined) return undefined;
      const patch = change(current);
      if (patch === undefined) return current;
      const next: Record<string, unknown> = { ...current };
      for (const [k, v] of Object.entries(patch)) {
        if (v === null) delete next[k];
        else next[k] = v;
      }
      all.set(agentId, next as unknown as SchedulableAgent);
      return next as unknown as SchedulableAgent;
    },
  };
}

function transferAgent(i: number, schedule = "hourly"): SchedulableAgent {
  return {
    agentId: `agent-${i}`,
    owner: "owner-1",
    type: "transfer",
    status: "pending",
    config: {
      source: "9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM",
      destination: "2ojv9BAiHUrvsm9gxDe7fJSzbNZSJcxZvf8dqmWGHG8S",
      amount: 1.5,
      token: "USDC",
      schedule,
    } as JsonObject,
    createdAt: T0,
    consecutiveFailures: 0,
  };
}

function replicas(
  count: number,
  shared: { agents: ScheduledAgents; runs: RunStore; now: () => Date },
  overrides: Partial<SchedulerOptions> = {},
): Scheduler[] {
  return Array.from({ length: count }, (_, i) =>
    createScheduler({
      agents: shared.agents,
      runs: shared.runs,
      executor: createSimulatedExecutor({ tokens }),
      clock: createScheduleClock({ scale: 1 }),
      checkRunnable: async (agent) =>
        (await tokens.canonicalSymbol(String(agent.config.token ?? agent.config.inputToken))) === undefined
          ? "its token is no longer in the catalog"
          : undefined,
      worker: `replica-${i}`,
      concurrency: 8,
      pollIntervalMs: 1_000_000,
      leaseMs: 30_000,
      attemptTimeoutMs: 5_000,
      maxAttempts: 3,
      retryBaseMs: 1,
      retryMaxMs: 2,
      maxConsecutiveFailures: 3,
      now: shared.now,
      ...overrides,
    }),
  );
}

async function allRuns(runs: RunStore, agents: Iterable<SchedulableAgent>): Promise<RunRecord[]> {
  const out: RunRecord[] = [];
  for (const a of agents) out.push(...(await runs.list(a.owner, a.agentId, { limit: 1000, offset: 0 })).runs);
  return out;
}

/**
 * Ticks every replica concurrently, then waits for their runs, `rounds` times or, with `until`,
 * until nothing is due (bounded).
 */
async function drain(schedulers: Scheduler[], rounds = 50, until?: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < (until === undefined ? rounds : 200); i++) {
    if (until !== undefined && (await until())) return;
    await Promise.all(schedulers.map((s) => s.tick()));
    await Promise.all(schedulers.map((s) => s.idle()));
  }
}

describe("activation", () => {
  it("activates a pending agent on the next poll, with its first slot one period after creation", async () => {
    const clock = movableClock(new Date(T0.getTime() + 1000));
    const agents = mapAgents();
    agents.all.set("agent-1", transferAgent(1));
    const [s] = replicas(1, { agents, runs: createMemoryRunStore(), now: clock.now });
    await s?.tick();
    expect(agents.all.get("agent-1")).toMatchObject({
      status: "active",
      nextRunAt: new Date(T0.getTime() + HOUR),
    });
  });

  it("fails an agent that cannot run, with the reason", async () => {
    const clock = movableClock(T0);
    const agents = mapAgents();
    agents.all.set("agent-1", { ...transferAgent(1), config: { ...transferAgent(1).config, token: "GONE" } });
    const [s] = replicas(1, { agents, runs: createMemoryRunStore(), now: clock.now });
    await s?.tick();
    expect(agents.all.get("agent-1")).toMatchObject({
      status: "failed",
      failureReason: "its token is no longer in the catalog",
    });
    expect(agents.all.get("agent-1")?.nextRunAt).toBeUndefined();
  });
});

describe("exactly once across replicas", () => {
  it("three replicas, 60 agents, 5 slots each: one succeeded run per (agent, slot)", async () => {
    const clock = movableClock(T0);
    const agents = mapAgents();
    for (let i = 0; i < 60; i++) agents.all.set(`agent-${i}`, transferAgent(i));
    const runs = createMemoryRunStore();
    const schedulers = replicas(3, { agents, runs, now: clock.now });
    await drain(schedulers, 2); // activation
    for (let k = 1; k <= 5; k++) {
      clock.set(slotAt(T0, "hourly", k));
      await drain(schedulers, 0, async () => (await agents.due(clock.now(), 1)).length === 0);
    }
    const history = await allRuns(runs, agents.all.values());
    const succeeded = history.filter((r) => r.outcome === "succeeded");
    const perSlot = new Map<string, number>();
    for (const r of succeeded) {
      const key = `${r.agentId}@${r.scheduledAt.toISOString()}`;
      perSlot.set(key, (perSlot.get(key) ?? 0) + 1);
    }
    expect(perSlot.size).toBe(60 * 5);
    expect([...perSlot.values()].every((n) => n === 1)).toBe(true);
    for (const agent of agents.all.values()) {
      expect(agent.lastRunAt).toBeDefined();
      expect(agent.nextRunAt?.toISOString()).toBe(slotAt(T0, "hourly", 6).toISOString());
    }
  });

  it("catches up on missed slots in order, each once", async () => {
    const clock = movableClock(T0);
    const agents = mapAgents();
    agents.all.set("agent-1", transferAgent(1));
    const runs = createMemoryRunStore();
    const schedulers = replicas(2, { agents, runs, now: clock.now });
    await drain(schedulers, 1);
    clock.set(new Date(T0.getTime() + 4.5 * HOUR));
    await drain(schedulers, 6);
    const slots = (await allRuns(runs, agents.all.values())).map(
      (r) => r.scheduledAt.getTime() - T0.getTime(),
    );
    expect(slots.sort((a, b) => a - b)).toEqual([1, 2, 3, 4].map((h) => h * HOUR));
  });
});

describe("failures", () => {
  it("retries a failed attempt, then settles the slot failed after the last attempt; 3 such slots fail the agent", async () => {
    const clock = movableClock(T0);
    const agents = mapAgents();
    agents.all.set("agent-1", transferAgent(1));
    const runs = createMemoryRunStore();
    const failing: Executor = { execute: async () => ({ ok: false, error: "simulated failure" }) };
    const schedulers = replicas(1, { agents, runs, now: clock.now }, { executor: failing });
    await drain(schedulers, 1);
    for (let k = 1; k <= 3; k++) {
      clock.set(slotAt(T0, "hourly", k));
      await drain(schedulers, 2);
    }
    const history = await allRuns(runs, agents.all.values());
    expect(history).toHaveLength(9); // 3 slots x 3 attempts
    expect(new Set(history.map((r) => r.attempt))).toEqual(new Set([1, 2, 3]));
    const agent = agents.all.get("agent-1");
    expect(agent?.status).toBe("failed");
    expect(agent?.failureReason).toMatch(/3 consecutive runs failed/);
    expect(agent?.nextRunAt).toBeUndefined();
    // No more runs once failed.
    clock.set(slotAt(T0, "hourly", 4));
    await drain(schedulers, 2);
    expect(await allRuns(runs, agents.all.values())).toHaveLength(9);
  });

  it("a success resets the consecutive failure count", async () => {
    const clock = movableClock(T0);
    const agents = mapAgents();
    agents.all.set("agent-1", transferAgent(1));
    const runs = createMemoryRunStore();
    let calls = 0;
    // Slot 1 fails all 3 attempts, slot 2 succeeds, slots 3 and 4 fail: never 3 in a row.
    const executor: Executor = {
      execute: async ({ scheduledAt }) => {
        calls++;
        const k = (scheduledAt.getTime() - T0.getTime()) / HOUR;
        return k === 2 ? { ok: true, result: { k } } : { ok: false, error: "simulated failure" };
      },
    };
    const schedulers = replicas(1, { agents, runs, now: clock.now }, { executor });
    await drain(schedulers, 1);
    for (let k = 1; k <= 4; k++) {
      clock.set(slotAt(T0, "hourly", k));
      await drain(schedulers, 2);
    }
    expect(calls).toBe(3 + 1 + 3 + 3);
    expect(agents.all.get("agent-1")).toMatchObject({ status: "active", consecutiveFailures: 2 });
  });
});

describe("leases", () => {
  it("a run that hangs past its lease is taken over by another replica, and the hung one records nothing", async () => {
    const clock = movableClock(T0);
    const agents = mapAgents();
    agents.all.set("agent-1", transferAgent(1));
    const runs = createMemoryRunStore();
    let release: () => void = () => {};
    const hung = new Promise<void>((resolve) => {
      release = resolve;
    });
    // Replica 0's executor hangs and ignores its abort signal; it answers success when released.
    const hanging: Executor = {
      execute: async () => {
        await hung;
        return { ok: true, result: { by: "replica-0" } };
      },
    };
    const [a] = replicas(1, { agents, runs, now: clock.now }, { executor: hanging, leaseMs: 60_000 });
    const [b] = replicas(1, { agents, runs, now: clock.now }, { leaseMs: 60_000 });
    await a?.tick();
    clock.set(slotAt(T0, "hourly", 1));
    await a?.tick(); // replica 0 claims slot 1 and hangs
    clock.advance(61_000 + 1_000); // past its lease and the clock-skew allowance
    await b?.tick();
    await b?.idle();
    release();
    await a?.idle();
    const history = await allRuns(runs, agents.all.values());
    expect(history).toHaveLength(1);
    expect(history[0]?.result).toMatchObject({ kind: "transfer" });
    expect(agents.all.get("agent-1")?.nextRunAt?.toISOString()).toBe(slotAt(T0, "hourly", 2).toISOString());
  });

  it("stop() lets a run in flight finish and record, and claims nothing after", async () => {
    const clock = movableClock(T0);
    const agents = mapAgents();
    agents.all.set("agent-1", transferAgent(1));
    agents.all.set("agent-2", transferAgent(2));
    const runs = createMemoryRunStore();
    const slow = createSimulatedExecutor({ tokens, faults: { latencyMs: 50 } });
    const [s] = replicas(1, { agents, runs, now: clock.now }, { executor: slow, concurrency: 1 });
    await s?.tick();
    await s?.tick(); // both activated
    clock.set(slotAt(T0, "hourly", 1));
    await s?.tick(); // one run in flight (concurrency 1)
    await s?.stop(5_000);
    await s?.tick(); // stopped: claims nothing
    await s?.idle();
    const history = await allRuns(runs, agents.all.values());
    expect(history).toHaveLength(1);
    expect(history[0]?.outcome).toBe("succeeded");
  });
});

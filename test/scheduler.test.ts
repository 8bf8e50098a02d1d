/**
 * The scheduler in-process: several replicas (schedulers with their own worker names) share the
 * stores, time is injected, and nothing waits for a schedule. Exactly once is checked from the run
 * history: every (agent, slot) has one succeeded run, none missing, none twice.
 */
import { randomBytes } from "node:crypto";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, expect, inject, it } from "vitest";
import type { AgentRecord, AgentStore, JsonObject } from "../src/agent/agent-store.ts";
import { createMemoryAgentStore } from "../src/agent/memory-agent-store.ts";
import { createMongoAgentStore } from "../src/agent/mongo-agent-store.ts";
import { builtInKinds } from "../src/kinds/built-in-kinds.ts";
import { createMemoryCheckClaims } from "../src/scheduler/check-claims.ts";
import type { Executor } from "../src/scheduler/executor.ts";
import { createMemoryRunStore } from "../src/scheduler/memory-run-store.ts";
import { createMongoRunStore } from "../src/scheduler/mongo-run-store.ts";
import { type Lease, type RunRecord, type RunStore, runIdOf } from "../src/scheduler/run-store.ts";
import { createScheduleClock } from "../src/scheduler/schedule-clock.ts";
import { createScheduler, type Scheduler, type SchedulerOptions } from "../src/scheduler/scheduler.ts";
import { createSimulatedExecutor } from "../src/scheduler/simulated-executor.ts";
import { slotAt } from "../src/scheduler/slots.ts";
import { catalogSymbolLookup, loadCatalog } from "../src/token/catalog.ts";
import { createCatalogPriceSource } from "../src/token/catalog-price-source.ts";
import { createJsonUpstream } from "../src/upstream/json-upstream.ts";
import { TRANSFER_CONFIG } from "./support/agent-fixtures.ts";
import { useCleanups } from "./support/cleanups.ts";
import { startFerretdb } from "./support/ferretdb.ts";
import { tickedSchedulerSettings } from "./support/scheduler-settings.ts";

const HOUR = 3_600_000;
const T0 = new Date("2031-06-01T00:00:00.000Z");
const catalog = loadCatalog();
const tokens = createCatalogPriceSource({ catalog });
const canonicalSymbol = catalogSymbolLookup(catalog);
const mintOf = (symbol: string) => catalog.tokens.find((t) => t.symbol === symbol)?.mint;

function movableClock(start: Date) {
  let current = start.getTime();
  return {
    now: () => new Date(current),
    advance: (ms: number) => {
      current += ms;
    },
    set: (d: Date) => {
      current = d.getTime();
    },
  };
}

const OWNER = "owner-1";

function transferAgent(i: number, config: Partial<JsonObject> = {}): AgentRecord {
  return {
    agentId: `agent-${i}-${randomBytes(4).toString("hex")}`,
    owner: OWNER,
    type: "transfer",
    status: "pending",
    config: { ...TRANSFER_CONFIG, schedule: "hourly", ...config } as JsonObject,
    createdAt: T0,
    nextRunAt: slotAt(T0, "hourly", 1),
  };
}

interface Stores {
  readonly agents: AgentStore;
  readonly runs: RunStore;
  cleanup(): Promise<void>;
}

const uri = inject("mongoUri");
let databases = 0;
const STORES: [string, () => Promise<Stores>][] = [
  [
    "memory",
    async () => ({ agents: createMemoryAgentStore(), runs: createMemoryRunStore(), cleanup: async () => {} }),
  ],
  [
    "mongo",
    async () => {
      const dbName = `scheduler_test_${randomBytes(3).toString("hex")}_${++databases}`;
      const agents = await createMongoAgentStore({ uri, dbName });
      return {
        agents,
        runs: createMongoRunStore({ db: agents.db, guard: agents.guard }),
        async cleanup() {
          try {
            await agents.db.dropDatabase();
          } finally {
            await agents.close();
          }
        },
      };
    },
  ],
];

function replicas(
  count: number,
  shared: { agents: AgentStore; runs: RunStore; now: () => Date },
  overrides: Partial<SchedulerOptions> = {},
): Scheduler[] {
  return Array.from({ length: count }, (_, i) =>
    createScheduler({
      agents: shared.agents,
      runs: shared.runs,
      executor: createSimulatedExecutor({ kinds: builtInKinds(), tokens, mintOf }),
      clock: createScheduleClock({ scale: 1 }),
      checkRunnable: async (agent) =>
        canonicalSymbol(String(agent.config.token ?? agent.config.inputToken)) === undefined
          ? "its token is no longer in the catalog"
          : undefined,
      worker: `replica-${i}`,
      ...tickedSchedulerSettings(),
      now: shared.now,
      ...overrides,
    }),
  );
}

async function allRuns(runs: RunStore, agents: Iterable<AgentRecord>): Promise<RunRecord[]> {
  const out: RunRecord[] = [];
  for (const a of agents) out.push(...(await runs.list(a.owner, a.agentId, { limit: 1000, offset: 0 })).runs);
  return out;
}

const defer = useCleanups();

/**
 * A Swap API over real HTTP that answers every call after `answerMs`, behind the service's own
 * upstream client taking `concurrency` calls at once and `queued` waiting (past both its bulkhead
 * refuses a call as `overloaded`); `outcomes` counts the client's calls by outcome.
 */
async function slowSwapApi(options: { answerMs: number; concurrency: number; queued: number }) {
  let firstAnswerAt = Number.POSITIVE_INFINITY;
  const server = createServer((_req, res) => {
    setTimeout(() => {
      firstAnswerAt = Math.min(firstAnswerAt, performance.now());
      res.setHeader("content-type", "application/json");
      res.end("{}");
    }, options.answerMs);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  defer(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  const outcomes = new Map<string, number>();
  const swapApi = createJsonUpstream({
    name: "the test Swap API",
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    timeoutMs: 20_000,
    maxConcurrency: options.concurrency,
    maxQueued: options.queued,
    breaker: { failures: 100, openMs: 30_000 },
    defaultRetryAfterMs: 1_000,
    onCall: (_endpoint, outcome) => outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1),
  });
  return { swapApi, outcomes, firstAnswerAt: () => firstAnswerAt };
}

/** An executor whose runs succeed only when the test calls `finish`: a run held in flight. */
function gatedExecutor(): { executor: Executor; finish: () => void } {
  let finish: () => void = () => {};
  const gate = new Promise<void>((resolve) => {
    finish = resolve;
  });
  return {
    executor: {
      execute: async () => {
        await gate;
        return { ok: true, result: { ok: true } };
      },
    },
    finish,
  };
}

/** Fresh stores holding `records`. */
async function storesWith(make: () => Promise<Stores>, records: AgentRecord[]): Promise<Stores> {
  const stores = await make();
  defer(() => stores.cleanup());
  for (const record of records) await stores.agents.create({ record });
  return stores;
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

describe.each(STORES)("on the %s stores", (_name, make) => {
  it("activates a pending agent on the next poll, keeping its first slot one period after creation", async () => {
    const agent = transferAgent(1);
    const { agents, runs } = await storesWith(make, [agent]);
    const clock = movableClock(new Date(T0.getTime() + 1000));
    const [s] = replicas(1, { agents, runs, now: clock.now });
    await s?.tick();
    expect(await agents.get(OWNER, agent.agentId)).toMatchObject({
      status: "active",
      nextRunAt: new Date(T0.getTime() + HOUR),
    });
  });

  it("keeps an agent pending while it waits (its approval), activates it once ready, and starts it at the first slot still ahead", async () => {
    const early = transferAgent(1);
    const late = transferAgent(2);
    const { agents, runs } = await storesWith(make, [early, late]);
    const clock = movableClock(new Date(T0.getTime() + 1000));
    const approved = new Set<string>();
    const [s] = replicas(
      1,
      { agents, runs, now: clock.now },
      {
        awaitReady: async (batch) =>
          batch.map((agent) => (approved.has(agent.agentId) ? undefined : "an approval")),
        readyWaitMs: 10 * HOUR,
      },
    );
    await s?.tick();
    expect(await agents.get(OWNER, early.agentId)).toMatchObject({ status: "pending" });
    // Approved before its first slot: it runs at that slot, as it was told at creation.
    approved.add(early.agentId);
    clock.advance(60_000);
    await s?.tick();
    expect(await agents.get(OWNER, early.agentId)).toMatchObject({
      status: "active",
      nextRunAt: new Date(T0.getTime() + HOUR),
    });
    // Approved after three slots went by: it starts at the next slot, with no catching up.
    clock.set(new Date(T0.getTime() + 3 * HOUR + 5_000));
    await s?.tick();
    expect(await agents.get(OWNER, late.agentId)).toMatchObject({ status: "pending" });
    approved.add(late.agentId);
    clock.advance(120_000);
    await s?.tick();
    expect(await agents.get(OWNER, late.agentId)).toMatchObject({
      status: "active",
      nextRunAt: new Date(T0.getTime() + 4 * HOUR),
    });
    await s?.idle();
    expect((await allRuns(runs, [late])).map((r) => r.scheduledAt.getTime())).toEqual([]);
  });

  it("checks the agents checkSoon names at once, without a poll, once for the fleet per change", async () => {
    const watched = transferAgent(1);
    const other = transferAgent(2);
    const { agents, runs } = await storesWith(make, [watched, other]);
    const clock = movableClock(new Date(T0.getTime() + 1000));
    const approved = new Set<string>();
    const asked = new Map<string, number>();
    let changes = 0;
    const claims = createMemoryCheckClaims();
    const fleet = replicas(
      3,
      { agents, runs, now: clock.now },
      {
        awaitReady: async (batch) =>
          batch.map((agent) => {
            asked.set(agent.agentId, (asked.get(agent.agentId) ?? 0) + 1);
            return approved.has(agent.agentId) ? undefined : "an approval";
          }),
        readyWaitMs: 10 * HOUR,
        checkClaims: claims,
        onPendingChanged: () => {
          changes++;
        },
      },
    );
    // Each replica learns of both from its poll (and tells its watch, onPendingChanged).
    for (const s of fleet) await s.tick();
    expect(changes).toBeGreaterThanOrEqual(3);
    expect(fleet.every((s) => [...s.pendingByOwner()].flat().length === 2)).toBe(true);
    asked.clear();
    approved.add(watched.agentId);
    // Every replica hears of the same change (its slot names it); no time passes, no poll comes.
    for (const s of fleet) s.checkSoon([watched.agentId, "not-pending-here"], "s42");
    for (let i = 0; i < 100 && (await agents.get(OWNER, watched.agentId))?.status !== "active"; i++) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect(await agents.get(OWNER, watched.agentId)).toMatchObject({ status: "active" });
    await Promise.all(fleet.map((s) => s.stop(1_000)));
    expect(Object.fromEntries(asked)).toEqual({ [watched.agentId]: 1 });
    expect((await agents.get(OWNER, other.agentId))?.status).toBe("pending");
  });

  it("fails an agent still waiting past the bound, saying what it waited for", async () => {
    const agent = transferAgent(1);
    const { agents, runs } = await storesWith(make, [agent]);
    const clock = movableClock(new Date(T0.getTime() + 1000));
    const [s] = replicas(
      1,
      { agents, runs, now: clock.now },
      {
        awaitReady: async (batch) => batch.map(() => "an approval of delegate D"),
        readyWaitMs: 2 * HOUR,
      },
    );
    await s?.tick();
    expect(await agents.get(OWNER, agent.agentId)).toMatchObject({ status: "pending" });
    clock.set(new Date(T0.getTime() + 2 * HOUR + 1));
    await s?.tick();
    const failed = await agents.get(OWNER, agent.agentId);
    expect(failed).toMatchObject({ status: "failed" });
    expect(failed?.failureReason).toBe("it was still waiting after 2 hours for an approval of delegate D");
    expect(await allRuns(runs, [agent])).toEqual([]);
  });

  it("agents waiting for approvals hide neither an agent that is ready nor the runs that are due", async () => {
    // More waiting agents than one poll looks at, plus one ready agent and one active, due agent.
    const waitingAgents = Array.from({ length: 150 }, (_, i) => transferAgent(100 + i));
    const ready = { ...transferAgent(1), agentId: "zzzz-ready" };
    const due: AgentRecord = { ...transferAgent(2), status: "active", nextRunAt: slotAt(T0, "hourly", 1) };
    const { agents, runs } = await storesWith(make, [...waitingAgents, ready, due]);
    const clock = movableClock(slotAt(T0, "hourly", 1));
    const [s] = replicas(
      1,
      { agents, runs, now: clock.now },
      {
        awaitReady: async (batch) =>
          batch.map((agent) => (agent.agentId === ready.agentId ? undefined : "an approval")),
        readyWaitMs: 10 * HOUR,
      },
    );
    for (let i = 0; i < 4; i++) {
      await s?.tick();
      await s?.idle();
    }
    expect(await agents.get(OWNER, ready.agentId)).toMatchObject({ status: "active" });
    expect((await allRuns(runs, [due])).filter((r) => r.outcome === "succeeded")).toHaveLength(1);
    expect((await agents.get(OWNER, waitingAgents[0]?.agentId as string))?.status).toBe("pending");
  });

  it("fails an agent that cannot run, with the reason, and never runs it", async () => {
    const agent = transferAgent(1, { token: "GONE" });
    const { agents, runs } = await storesWith(make, [agent]);
    const clock = movableClock(T0);
    const schedulers = replicas(1, { agents, runs, now: clock.now });
    await drain(schedulers, 1);
    const failed = await agents.get(OWNER, agent.agentId);
    expect(failed).toMatchObject({
      status: "failed",
      failureReason: "its token is no longer in the catalog",
    });
    expect(failed?.nextRunAt).toBeUndefined();
    clock.set(slotAt(T0, "hourly", 2));
    await drain(schedulers, 2);
    expect(await allRuns(runs, [agent])).toEqual([]);
  });

  it("three replicas, 40 agents, 5 slots each: one succeeded run per (agent, slot)", async () => {
    const records = Array.from({ length: 40 }, (_, i) => transferAgent(i));
    const { agents, runs } = await storesWith(make, records);
    const clock = movableClock(T0);
    const schedulers = replicas(3, { agents, runs, now: clock.now });
    const nothingDue = async () => {
      const [due, pending] = await Promise.all([agents.due(clock.now(), 1), agents.pending(undefined, 1)]);
      return due.length === 0 && pending.length === 0;
    };
    await drain(schedulers, 0, nothingDue); // activation
    for (let k = 1; k <= 5; k++) {
      clock.set(slotAt(T0, "hourly", k));
      await drain(schedulers, 0, nothingDue);
    }
    const history = await allRuns(runs, records);
    const perSlot = new Map<string, number>();
    for (const r of history.filter((r) => r.outcome === "succeeded")) {
      const key = `${r.agentId}@${r.scheduledAt.toISOString()}`;
      perSlot.set(key, (perSlot.get(key) ?? 0) + 1);
    }
    expect(perSlot.size).toBe(40 * 5);
    expect([...perSlot.values()].filter((n) => n !== 1)).toEqual([]);
    for (const record of records) {
      const agent = await agents.get(OWNER, record.agentId);
      expect(agent?.lastRunAt).toBeDefined();
      expect(agent?.nextRunAt?.toISOString()).toBe(slotAt(T0, "hourly", 6).toISOString());
    }
    // Three replicas' polls against one FerretDB, beside another test file: a bound a slow machine
    // cannot miss by chance (it takes 5 to 15 s here).
  }, 120_000);

  it("catches up on missed slots in order, each once", async () => {
    const agent = transferAgent(1);
    const { agents, runs } = await storesWith(make, [agent]);
    const clock = movableClock(T0);
    const schedulers = replicas(2, { agents, runs, now: clock.now });
    await drain(schedulers, 1);
    clock.set(new Date(T0.getTime() + 4.5 * HOUR));
    await drain(schedulers, 6);
    const slots = (await allRuns(runs, [agent])).map((r) => r.scheduledAt.getTime() - T0.getTime());
    expect(slots.sort((a, b) => a - b)).toEqual([1, 2, 3, 4].map((h) => h * HOUR));
  });

  it("retries a failed attempt, settles the slot failed after the last one, and fails the agent after 3 such slots", async () => {
    const agent = transferAgent(1);
    const { agents, runs } = await storesWith(make, [agent]);
    const clock = movableClock(T0);
    const failing: Executor = { execute: async () => ({ ok: false, error: "simulated failure" }) };
    const schedulers = replicas(1, { agents, runs, now: clock.now }, { executor: failing });
    await drain(schedulers, 1);
    for (let k = 1; k <= 3; k++) {
      clock.set(slotAt(T0, "hourly", k));
      await drain(schedulers, 2);
    }
    const history = await allRuns(runs, [agent]);
    expect(history).toHaveLength(9); // 3 slots x 3 attempts
    expect(history.map((r) => r.attempt).sort()).toEqual([1, 1, 1, 2, 2, 2, 3, 3, 3]);
    const failed = await agents.get(OWNER, agent.agentId);
    expect(failed?.status).toBe("failed");
    expect(failed?.failureReason).toMatch(/3 consecutive runs failed/);
    expect(failed?.nextRunAt).toBeUndefined();
    clock.set(slotAt(T0, "hourly", 4));
    await drain(schedulers, 2);
    expect(await allRuns(runs, [agent])).toHaveLength(9);
  });

  it("a success resets the consecutive failure count", async () => {
    const agent = transferAgent(1);
    const { agents, runs } = await storesWith(make, [agent]);
    const clock = movableClock(T0);
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
    expect(await agents.get(OWNER, agent.agentId)).toMatchObject({
      status: "active",
      consecutiveFailures: 2,
    });
  });

  it("a skipped slot settles at once and neither ends nor extends a run of failures", async () => {
    const agent = transferAgent(1);
    const { agents, runs } = await storesWith(make, [agent]);
    const clock = movableClock(T0);
    let calls = 0;
    // Slots 1 and 2 fail, 3 to 5 are skipped (out of a price band), 6 fails: three failures in a
    // row once the skips are left out, so the agent fails at slot 6 and not before.
    const executor: Executor = {
      execute: async ({ scheduledAt }) => {
        calls++;
        const k = (scheduledAt.getTime() - T0.getTime()) / HOUR;
        return k >= 3 && k <= 5
          ? { ok: true, skipped: true, result: { skipped: true, k } }
          : { ok: false, error: "simulated failure" };
      },
    };
    const schedulers = replicas(1, { agents, runs, now: clock.now }, { executor });
    await drain(schedulers, 1);
    for (let k = 1; k <= 5; k++) {
      clock.set(slotAt(T0, "hourly", k));
      await drain(schedulers, 2);
    }
    expect(await agents.get(OWNER, agent.agentId)).toMatchObject({
      status: "active",
      consecutiveFailures: 2,
    });
    const skipped = (await allRuns(runs, [agent])).filter((r) => r.outcome === "skipped");
    // One attempt each: a skip is not retried.
    expect(skipped.map((r) => [r.attempt, r.result?.k]).sort()).toEqual([
      [1, 3],
      [1, 4],
      [1, 5],
    ]);
    clock.set(slotAt(T0, "hourly", 6));
    await drain(schedulers, 2);
    expect(calls).toBe(3 + 3 + 1 + 1 + 1 + 3);
    expect(await agents.get(OWNER, agent.agentId)).toMatchObject({ status: "failed" });
  });

  it("a run that hangs past its lease is taken over, and the hung replica records nothing", async () => {
    const agent = transferAgent(1);
    const { agents, runs } = await storesWith(make, [agent]);
    const clock = movableClock(T0);
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
    const history = await allRuns(runs, [agent]);
    expect(history).toHaveLength(1);
    expect(history[0]?.result).toMatchObject({ kind: "transfer" });
    expect((await agents.get(OWNER, agent.agentId))?.nextRunAt?.toISOString()).toBe(
      slotAt(T0, "hourly", 2).toISOString(),
    );
  });

  it("stop() lets a run in flight finish and record, and claims nothing after", async () => {
    const records = [transferAgent(1), transferAgent(2)];
    const { agents, runs } = await storesWith(make, records);
    const clock = movableClock(T0);
    const slow = createSimulatedExecutor({
      kinds: builtInKinds(),
      tokens,
      mintOf,
      faults: { latencyMs: 50 },
    });
    const [s] = replicas(1, { agents, runs, now: clock.now }, { executor: slow, concurrency: 1 });
    await s?.tick(); // both activated
    clock.set(slotAt(T0, "hourly", 1));
    await s?.tick(); // one run in flight (concurrency 1)
    await s?.stop(5_000);
    await s?.tick(); // stopped: claims nothing
    await s?.idle();
    const history = await allRuns(runs, records);
    expect(history).toHaveLength(1);
    expect(history[0]?.outcome).toBe("succeeded");
  });

  it("stop() during a retry's backoff makes no new attempt and releases the slot, so another replica goes on at once", async () => {
    const agent = transferAgent(1);
    const { agents, runs } = await storesWith(make, [agent]);
    const clock = movableClock(T0);
    let attempts = 0;
    const failing: Executor = {
      execute: async () => {
        attempts++;
        return { ok: false, error: "simulated failure" };
      },
    };
    const [a] = replicas(
      1,
      { agents, runs, now: clock.now },
      { executor: failing, retryBaseMs: 500, retryMaxMs: 500, random: () => 0.99 },
    );
    await a?.tick();
    clock.set(slotAt(T0, "hourly", 1));
    await a?.tick(); // attempt 1 fails; the run waits about half a second to retry
    await new Promise((resolve) => setTimeout(resolve, 50));
    await a?.stop(5_000);
    expect(attempts).toBe(1);
    // The lease was released: a second replica claims the slot without waiting for it to expire.
    const [b] = replicas(1, { agents, runs, now: clock.now });
    await b?.tick();
    await b?.idle();
    const history = await allRuns(runs, [agent]);
    expect(history.map((r) => [r.attempt, r.outcome]).sort()).toEqual([
      [1, "failed"],
      [2, "succeeded"],
    ]);
  });

  it("pause, resume and a finishing run racing on one agent lose no update", async () => {
    const agent = transferAgent(1);
    const { agents, runs } = await storesWith(make, [agent]);
    const clock = movableClock(T0);
    const { executor: gated, finish } = gatedExecutor();
    const [s] = replicas(1, { agents, runs, now: clock.now }, { executor: gated });
    await s?.tick();
    clock.set(slotAt(T0, "hourly", 1));
    await s?.tick(); // the run for slot 1 is in flight
    // The owner pauses while it runs; the run then finishes.
    const paused = await agents.update(OWNER, agent.agentId, () => ({ status: "paused", nextRunAt: null }));
    expect(paused?.status).toBe("paused");
    finish();
    await s?.idle();
    const after = await agents.get(OWNER, agent.agentId);
    // Both changes are there: paused (no next run), and the run's lastRunAt.
    expect(after?.status).toBe("paused");
    expect(after?.nextRunAt).toBeUndefined();
    expect(after?.lastRunAt).toBeDefined();
    // Nothing runs while paused.
    clock.set(slotAt(T0, "hourly", 3));
    await s?.tick();
    await s?.idle();
    expect(await allRuns(runs, [agent])).toHaveLength(1);
  });
});

describe.each(STORES)("polling on the %s stores", (_name, make) => {
  /** `count` agents, active, whose first slot is due at `slotAt(T0, "hourly", 1)`. */
  const dueAgents = (count: number) =>
    Array.from({ length: count }, (_, i) => ({ ...transferAgent(i), status: "active" as const }));

  /**
   * Runs one replica over `count` agents due at once until none is due (every one must succeed
   * within 30 s), its store's due and pending queries counted: in all, and as they stood when at
   * most four agents were left due (`beforeTail`; from then on capacity is free, and a poll each
   * interval rightly asks). `dueDelayMs` slows the due answers.
   */
  async function drainBacklog(
    count: number,
    overrides: Partial<SchedulerOptions>,
    dueDelayMs = 0,
  ): Promise<{ due: number; pending: number; beforeTail: { due: number; pending: number } }> {
    const records = dueAgents(count);
    const { agents, runs } = await storesWith(make, records);
    const queries = { due: 0, pending: 0 };
    const counted: AgentStore = {
      ...agents,
      due: async (at, limit) => {
        queries.due++;
        if (dueDelayMs > 0) await new Promise((resolve) => setTimeout(resolve, dueDelayMs));
        return agents.due(at, limit);
      },
      pending: (after, limit) => {
        queries.pending++;
        return agents.pending(after, limit);
      },
    };
    const clock = movableClock(slotAt(T0, "hourly", 1));
    const [s] = replicas(1, { agents: counted, runs, now: clock.now }, overrides);
    s?.start();
    defer(async () => {
      await s?.stop(1_000);
    });
    const deadline = performance.now() + 30_000;
    let beforeTail: { due: number; pending: number } | undefined;
    for (;;) {
      const left = (await agents.due(clock.now(), 5)).length;
      if (left <= 4) beforeTail ??= { ...queries };
      if (left === 0) break;
      expect(performance.now(), `${count} runs within 30 s, not one poll interval each`).toBeLessThan(
        deadline,
      );
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    await s?.stop(1_000);
    expect((await allRuns(runs, records)).filter((r) => r.outcome === "succeeded")).toHaveLength(count);
    return { ...queries, beforeTail: beforeTail ?? { ...queries } };
  }

  it("drains a backlog as runs finish, without waiting for the poll interval", async () => {
    await drainBacklog(40, { concurrency: 4, pollIntervalMs: 600_000 });
  });

  it("drains a backlog from few due answers, and looks at pending agents once meanwhile", async () => {
    // Answers stay usable for ten minutes here: the counts must not depend on how fast the runs
    // finish on this machine.
    const queries = await drainBacklog(40, { concurrency: 4, pollIntervalMs: 600_000, reuseMs: 600_000 });
    // A poll every two finished runs is about 20 polls; asking the store at each would read every
    // agent 40 times on FerretDB. The first answer holds 32 agents, the next the rest.
    expect(queries.due).toBeLessThanOrEqual(4);
    expect(queries.pending).toBeLessThanOrEqual(2);
  });

  it("a replica at full capacity keeps working through its last due answer", async () => {
    // Runs that take a while, and a poll interval much shorter: most polls find no free capacity.
    const slow: Executor = {
      execute: async () => {
        await new Promise((resolve) => setTimeout(resolve, 40));
        return { ok: true, result: { ok: true } };
      },
    };
    const queries = await drainBacklog(20, {
      concurrency: 2,
      pollIntervalMs: 5,
      reuseMs: 600_000,
      executor: slow,
    });
    // The first answer holds 16 agents, the next the rest. A poll that finds no capacity must not
    // forget the backlog, or the next one asks afresh: about one query per run.
    expect(queries.beforeTail.due).toBeLessThanOrEqual(3);
  });

  it("reuses a slow due answer for ten times as long as it took", async () => {
    // A store that takes 400 ms to answer (FerretDB reading 10,000 agents takes about 500).
    const queries = await drainBacklog(40, { concurrency: 4, pollIntervalMs: 600_000, reuseMs: 1 }, 400);
    // Each answer serves 4 s of polls: the 32 agents of the first, then the rest. Asking at every
    // poll (a poll every two finished runs) would be about 20 queries.
    expect(queries.due).toBeLessThanOrEqual(4);
  });

  it("polls once per interval while nothing is due, one query each", async () => {
    const { agents, runs } = await storesWith(make, []);
    let queries = 0;
    const counted: AgentStore = {
      ...agents,
      due: (at, limit) => {
        queries++;
        return agents.due(at, limit);
      },
    };
    const [s] = replicas(1, { agents: counted, runs, now: () => new Date() }, { pollIntervalMs: 100 });
    s?.start();
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    await s?.stop(1_000);
    // About ten polls in a second; a poll that starts right after the last one would make hundreds.
    expect(queries).toBeGreaterThanOrEqual(3);
    expect(queries).toBeLessThanOrEqual(12);
  });

  it("swaps waiting for a slow Swap API hold no slot: due transfers finish meanwhile, and the Swap API refuses none", async () => {
    // A Swap API that answers after 2 s, behind the service's own upstream client: 3 calls at
    // once and 1 waiting (4 in all; past that its bulkhead refuses calls as `overloaded`).
    const ROUTE_MS = 2_000;
    const UPSTREAM = { name: "swap_api", calls: 4 };
    const { swapApi, outcomes, firstAnswerAt } = await slowSwapApi({
      answerMs: ROUTE_MS,
      concurrency: 3,
      queued: 1,
    });
    // More swaps due than the Swap API takes at once, due before the transfers (so that a poll
    // meets them first), and a concurrency of 2.
    const slot = slotAt(T0, "hourly", 1);
    const swapsCreatedAt = new Date(T0.getTime() - 60_000);
    const swaps = Array.from({ length: 6 }, (_, i) => ({
      ...transferAgent(i),
      type: "swap" as const,
      status: "active" as const,
      createdAt: swapsCreatedAt,
      nextRunAt: slotAt(swapsCreatedAt, "hourly", 1),
    }));
    const transfers = Array.from({ length: 3 }, (_, i) => ({
      ...transferAgent(10 + i),
      status: "active" as const,
      nextRunAt: slot,
    }));
    const { agents, runs } = await storesWith(make, [...swaps, ...transfers]);
    const inFlight = { all: 0, swaps: 0, maxAll: 0, maxSwaps: 0 };
    const transfersDone: number[] = [];
    const executor: Executor = {
      upstreamOf: (agent) => (agent.type === "swap" ? UPSTREAM : undefined),
      async execute(execution) {
        const swap = execution.agent.type === "swap";
        inFlight.all++;
        if (swap) inFlight.swaps++;
        inFlight.maxAll = Math.max(inFlight.maxAll, inFlight.all);
        inFlight.maxSwaps = Math.max(inFlight.maxSwaps, inFlight.swaps);
        try {
          if (swap) {
            const route = () => swapApi.getJson("swap_build", "/build", 1_000, { signal: execution.signal });
            await (execution.awaitingUpstream?.(route) ?? route());
            // Past its route, a swap still signs, sends and is confirmed (its upstream place is free).
            inFlight.swaps--;
          } else {
            transfersDone.push(performance.now());
          }
          return { ok: true, result: { kind: execution.agent.type } };
        } finally {
          inFlight.all--;
        }
      },
    };
    const clock = movableClock(slot);
    // A poll interval that never fires: the swaps left for the full Swap API must be started by
    // the runs that free it, not by a later poll. random ~1: the due order is kept (swaps first).
    const [s] = replicas(
      1,
      { agents, runs, now: clock.now },
      { executor, concurrency: 2, pollIntervalMs: 600_000, random: () => 0.99999 },
    );
    s?.start();
    defer(async () => {
      await s?.stop(1_000);
    });
    const records = [...swaps, ...transfers];
    const deadline = performance.now() + 30_000;
    while ((await allRuns(runs, records)).filter((r) => r.outcome === "succeeded").length < records.length) {
      expect(performance.now(), "every run within 30 s").toBeLessThan(deadline);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    await s?.stop(1_000);
    // The transfers ran while the routes were being waited for.
    expect(transfersDone).toHaveLength(3);
    expect(Math.max(...transfersDone)).toBeLessThan(firstAnswerAt());
    // No swap was refused by the Swap API's bound: every one asked once and was answered.
    expect(outcomes.get("overloaded") ?? 0).toBe(0);
    expect(outcomes.get("ok")).toBe(6);
    // Bounded: at most `calls` swaps before or at their route, and `concurrency` other runs beside
    // them; more than `concurrency` in all, since the swaps' wait is not counted.
    expect(inFlight.maxSwaps).toBeLessThanOrEqual(UPSTREAM.calls);
    expect(inFlight.maxAll).toBeLessThanOrEqual(2 + UPSTREAM.calls);
    expect(inFlight.maxAll).toBeGreaterThan(2);
    expect((await allRuns(runs, records)).map((r) => r.outcome)).toEqual(records.map(() => "succeeded"));
  });

  it("a swap past its route gives its place at the Swap API to the next due swap, and the Swap API refuses none", async () => {
    // A Swap API that answers after 200 ms, 2 calls at once and none waiting; each swap then takes
    // 1.5 s more to sign, send and be confirmed, needing the Swap API no more.
    const UPSTREAM = { name: "swap_api", calls: 2 };
    const { swapApi, outcomes } = await slowSwapApi({ answerMs: 200, concurrency: 2, queued: 0 });
    const createdAt = new Date(T0.getTime() - 60_000);
    const slot = slotAt(createdAt, "hourly", 1);
    const swaps = Array.from({ length: 6 }, (_, i) => ({
      ...transferAgent(i),
      type: "swap" as const,
      status: "active" as const,
      createdAt,
      nextRunAt: slot,
    }));
    const { agents, runs } = await storesWith(make, swaps);
    const seen = { atRoute: 0, swaps: 0, maxAtRoute: 0, maxSwaps: 0 };
    const executor: Executor = {
      upstreamOf: () => UPSTREAM,
      async execute(execution) {
        seen.swaps++;
        seen.maxSwaps = Math.max(seen.maxSwaps, seen.swaps);
        try {
          const route = async () => {
            seen.atRoute++;
            seen.maxAtRoute = Math.max(seen.maxAtRoute, seen.atRoute);
            try {
              return await swapApi.getJson("swap_build", "/build", 1_000, { signal: execution.signal });
            } finally {
              seen.atRoute--;
            }
          };
          await (execution.awaitingUpstream?.(route) ?? route());
          await new Promise((resolve) => setTimeout(resolve, 1_500));
          return { ok: true, result: { kind: "swap" } };
        } finally {
          seen.swaps--;
        }
      },
    };
    const clock = movableClock(slot);
    // A poll interval that never fires: the next swaps start when a route has answered.
    const [s] = replicas(
      1,
      { agents, runs, now: clock.now },
      { executor, concurrency: 4, pollIntervalMs: 600_000 },
    );
    s?.start();
    defer(async () => {
      await s?.stop(1_000);
    });
    const deadline = performance.now() + 30_000;
    while ((await allRuns(runs, swaps)).filter((r) => r.outcome === "succeeded").length < swaps.length) {
      expect(performance.now(), "every run within 30 s").toBeLessThan(deadline);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    await s?.stop(1_000);
    expect(outcomes.get("overloaded") ?? 0).toBe(0);
    expect(outcomes.get("ok")).toBe(6);
    // Never more at the Swap API than it takes, yet more swaps under way than that: those past
    // their route held no place there.
    expect(seen.maxAtRoute).toBeLessThanOrEqual(UPSTREAM.calls);
    expect(seen.maxSwaps).toBeGreaterThan(UPSTREAM.calls);
    expect(seen.maxSwaps).toBeLessThanOrEqual(UPSTREAM.calls + 4);
  });

  it("leaves a slot another replica holds alone until its lease could have run out, then takes it over", async () => {
    const agent = transferAgent(1);
    const { agents, runs } = await storesWith(make, [agent]);
    const clock = movableClock(T0);
    const { executor: gated, finish } = gatedExecutor();
    defer(async () => finish());
    const [a] = replicas(1, { agents, runs, now: clock.now }, { executor: gated });
    let claims = 0;
    const counted: RunStore = {
      ...runs,
      claim: (slot, claimOptions) => {
        claims++;
        return runs.claim(slot, claimOptions);
      },
    };
    const [b] = replicas(1, { agents, runs: counted, now: clock.now });
    await a?.tick(); // activated
    clock.set(slotAt(T0, "hourly", 1));
    await a?.tick(); // replica 0 runs slot 1 and waits
    for (let i = 0; i < 3; i++) await b?.tick();
    expect(claims).toBe(1);
    clock.advance(30_000 + 1_000); // past replica 0's lease and the clock-skew allowance
    await b?.tick();
    await b?.idle();
    expect(claims).toBe(2);
    const history = await allRuns(runs, [agent]);
    expect(history.map((r) => [r.outcome, r.attempt])).toEqual([["succeeded", 1]]);
    expect((await agents.get(OWNER, agent.agentId))?.nextRunAt?.toISOString()).toBe(
      slotAt(T0, "hourly", 2).toISOString(),
    );
  });

  it("looks again at a slot held by a live replica every renewal period, and takes it over within one of its expiry", async () => {
    const agent = { ...transferAgent(1), status: "active" as const };
    const { agents, runs } = await storesWith(make, [agent]);
    const slot = { agentId: agent.agentId, owner: OWNER, scheduledAt: slotAt(T0, "hourly", 1) };
    const clock = movableClock(slot.scheduledAt);
    // Another replica holds the slot (30 s leases) and renews 20 s later, as its heartbeat would.
    const held = (await runs.claim(slot, { worker: "other", now: clock.now(), leaseMs: 30_000 })) as Lease;
    let claims = 0;
    const counted: RunStore = {
      ...runs,
      claim: (s, o) => {
        claims++;
        return runs.claim(s, o);
      },
    };
    const [b] = replicas(1, { agents, runs: counted, now: clock.now });
    const tickAt = async (ms: number) => {
      clock.set(new Date(slot.scheduledAt.getTime() + ms));
      await b?.tick();
      await b?.idle();
    };
    await tickAt(0); // held: left alone for a lease and the skew allowance
    await runs.renew(held, { now: new Date(slot.scheduledAt.getTime() + 20_000), leaseMs: 30_000 });
    await tickAt(30_000);
    expect(claims).toBe(1);
    await tickAt(31_000); // still held (renewed to 50 s): looked at again every 10 s from now on
    await tickAt(40_000);
    expect(claims).toBe(2);
    await tickAt(41_000); // held until 50 s
    await tickAt(51_000); // its lease and the allowance are over: taken over
    expect(claims).toBe(4);
    expect((await allRuns(runs, [agent])).map((r) => r.outcome)).toEqual(["succeeded"]);
  });

  it("tells each run the agent's successes earlier on its UTC day, across midnight", async () => {
    const createdAt = new Date("2031-06-01T21:30:00.000Z");
    const agent = {
      ...transferAgent(1),
      createdAt,
      status: "active" as const,
      nextRunAt: slotAt(createdAt, "hourly", 1),
    };
    const { agents, runs } = await storesWith(make, [agent]);
    const clock = movableClock(createdAt);
    const seen: string[][] = [];
    const counting: Executor = {
      execute: async ({ journal, scheduledAt }) => {
        seen.push((await journal.succeededToday()).map((r) => r.scheduledAt.toISOString().slice(11, 16)));
        return { ok: true, result: { at: scheduledAt.toISOString() } };
      },
    };
    const [s] = replicas(1, { agents, runs, now: clock.now }, { executor: counting });
    for (let k = 1; k <= 4; k++) {
      clock.set(slotAt(createdAt, "hourly", k));
      await s?.tick();
      await s?.idle();
    }
    // 22:30, 23:30, then 00:30 and 01:30 of the next day.
    expect(seen).toEqual([[], ["22:30"], [], ["00:30"]]);
  });

  /**
   * An active agent whose slot 1 a replica settled (at slot + 10 ms) before dying without
   * advancing the agent, its lease still running; and an executor that counts its calls.
   */
  async function settledByADeadReplica() {
    const agent = { ...transferAgent(1), status: "active" as const };
    const { agents, runs } = await storesWith(make, [agent]);
    const slot = { agentId: agent.agentId, owner: OWNER, scheduledAt: slotAt(T0, "hourly", 1) };
    const lease = (await runs.claim(slot, {
      worker: "dead",
      now: slot.scheduledAt,
      leaseMs: 30_000,
    })) as Lease;
    const finishedAt = new Date(slot.scheduledAt.getTime() + 10);
    const run: RunRecord = {
      ...slot,
      runId: runIdOf(slot, 1),
      attempt: 1,
      startedAt: slot.scheduledAt,
      finishedAt,
      outcome: "succeeded",
      result: { ok: true },
    };
    expect(await runs.record(lease, run, { now: finishedAt, settles: true })).toBe("recorded");
    const executor = {
      calls: 0,
      async execute() {
        executor.calls++;
        return { ok: true as const, result: {} };
      },
    };
    const repaired = async () => {
      expect(executor.calls).toBe(0);
      expect(await agents.get(OWNER, agent.agentId)).toMatchObject({
        lastRunAt: finishedAt,
        nextRunAt: slotAt(T0, "hourly", 2),
      });
      expect(await allRuns(runs, [agent])).toHaveLength(1);
    };
    return { agent, agents, runs, slot, executor, repaired };
  }

  it("repairs a crash between settling a slot and advancing its agent on the next poll, without running it again", async () => {
    const { agents, runs, slot, executor, repaired } = await settledByADeadReplica();
    // The settle was ten seconds ago: its holder would have advanced the agent by now.
    const clock = movableClock(new Date(slot.scheduledAt.getTime() + 10_000));
    const [s] = replicas(1, { agents, runs, now: clock.now }, { executor });
    await s?.tick();
    await s?.idle();
    await repaired();
  });

  it("leaves a slot settled a moment ago to its holder for a few seconds, and repairs it if it stays", async () => {
    const { agent, agents, runs, slot, executor, repaired } = await settledByADeadReplica();
    // 100 ms after the settle its holder may be advancing the agent right now, and a second
    // later too; five seconds later it died.
    const clock = movableClock(new Date(slot.scheduledAt.getTime() + 110));
    const [s] = replicas(1, { agents, runs, now: clock.now }, { executor });
    for (const wait of [0, 1_000]) {
      clock.advance(wait);
      await s?.tick();
      await s?.idle();
      expect((await agents.get(OWNER, agent.agentId))?.nextRunAt).toEqual(slot.scheduledAt);
    }
    clock.advance(4_000);
    await s?.tick();
    await s?.idle();
    await repaired();
  });
});

describe("faults", () => {
  it.each(STORES)(
    "%s: an agent deleted while its run is in flight stays deleted; the run is still recorded",
    async (_n, make) => {
      const agent = transferAgent(1);
      const { agents, runs } = await storesWith(make, [agent]);
      const clock = movableClock(T0);
      const { executor: gated, finish } = gatedExecutor();
      const [s] = replicas(1, { agents, runs, now: clock.now }, { executor: gated });
      await s?.tick();
      clock.set(slotAt(T0, "hourly", 1));
      await s?.tick();
      expect(await agents.delete(OWNER, agent.agentId)).toBe(true);
      finish();
      await s?.idle();
      expect(await agents.get(OWNER, agent.agentId)).toBeUndefined();
      expect(await allRuns(runs, [agent])).toHaveLength(1);
      clock.set(slotAt(T0, "hourly", 3));
      await s?.tick();
      await s?.idle();
      expect(await allRuns(runs, [agent])).toHaveLength(1);
    },
  );

  it("the database stopped and restarted during a run: the slot still gets exactly one succeeded run", async () => {
    const db = await startFerretdb();
    defer(() => db.stop());
    const agentStore = await createMongoAgentStore({
      uri: db.uri,
      dbName: "scheduler_restart",
      serverSelectionTimeoutMS: 300,
      operationTimeoutMS: 1_000,
    });
    defer(() => agentStore.close());
    const runs = createMongoRunStore({ db: agentStore.db, guard: agentStore.guard });
    const agent = transferAgent(1);
    await agentStore.create({ record: agent });
    const clock = movableClock(T0);
    let started: () => void = () => {};
    const running = new Promise<void>((resolve) => {
      started = resolve;
    });
    let finish: () => void = () => {};
    const gate = new Promise<void>((resolve) => {
      finish = resolve;
    });
    let calls = 0;
    const gated: Executor = {
      execute: async () => {
        calls++;
        started();
        await gate;
        return { ok: true, result: { ok: true } };
      },
    };
    const [s] = replicas(
      1,
      { agents: agentStore, runs, now: clock.now },
      { executor: gated, retryBaseMs: 1 },
    );
    await s?.tick();
    clock.set(slotAt(T0, "hourly", 1));
    await s?.tick();
    await running;
    // The database crashes while the executor works, and comes back.
    await db.kill();
    finish();
    // Recording fails while it is down (the run's outcome is lost with it); polls fail too.
    await s?.idle();
    await s?.tick();
    await db.restart();
    // The lease of the lost outcome expires; the slot is run again and settled once.
    clock.advance(30_000 + 1_000);
    const deadline = performance.now() + 20_000;
    while ((await agentStore.get(OWNER, agent.agentId).catch(() => undefined))?.lastRunAt === undefined) {
      expect(performance.now()).toBeLessThan(deadline);
      await s?.tick();
      await s?.idle();
    }
    const history = await allRuns(runs, [agent]);
    expect(history.filter((r) => r.outcome === "succeeded")).toHaveLength(1);
    expect(calls).toBeGreaterThanOrEqual(2);
    expect((await agentStore.get(OWNER, agent.agentId))?.nextRunAt?.toISOString()).toBe(
      slotAt(T0, "hourly", 2).toISOString(),
    );
  });
});

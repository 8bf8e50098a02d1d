/**
 * The scheduler's own cost, in process and without a chain: agents that are all due at once, run
 * by the simulated executor (a dry run), on the memory stores and on FerretDB. Prints runs a
 * second and, on FerretDB, the database commands each run cost (from the driver's command
 * monitoring, by command and collection). Asserts nothing.
 *
 *   node scripts/bench/scheduler.ts                (memory, then FerretDB)
 *   BENCH_ONLY=scheduler npm run bench             (the same, from the main bench)
 *
 * BENCH_SCHEDULER_STORES=memory,FerretDB picks the stores; BENCH_SCHEDULER_AGENTS (default 1000
 * on FerretDB, 1000 and 5000 in memory), BENCH_SCHEDULER_CONCURRENCY (default 16) and
 * BENCH_SCHEDULER_REPLICAS (default 1 and 3 on FerretDB) change the load. Each agent runs two
 * hourly slots of one UTC day (time is injected); the second is measured. "journal" rows use an
 * executor that reads and writes the slot's journal as a chain transfer does (its transactions,
 * the day's successes, one kept transaction), so their commands are a transfer's.
 */
import { randomBytes } from "node:crypto";
import { Registry } from "prom-client";
import type { AgentRecord, AgentStore } from "../../src/agent/agent-store.ts";
import { createMemoryAgentStore } from "../../src/agent/memory-agent-store.ts";
import { createAnnouncingAgentStore } from "../../src/events/announcing-agent-store.ts";
import type { EventLog } from "../../src/events/event-log.ts";
import { createMemoryEventLog } from "../../src/events/memory-event-log.ts";
import { createRunAnnouncer } from "../../src/events/run-announcer.ts";
import { builtInKinds } from "../../src/kinds/built-in-kinds.ts";
import { registerMongoCommandMetrics } from "../../src/observability/mongo-command-metrics.ts";
import type { Executor } from "../../src/scheduler/executor.ts";
import { createMemoryRunStore } from "../../src/scheduler/memory-run-store.ts";
import type { RunStore } from "../../src/scheduler/run-store.ts";
import { createScheduleClock } from "../../src/scheduler/schedule-clock.ts";
import { createScheduler, type Scheduler } from "../../src/scheduler/scheduler.ts";
import { createSimulatedExecutor } from "../../src/scheduler/simulated-executor.ts";
import { slotAt } from "../../src/scheduler/slots.ts";
import { loadCatalog } from "../../src/token/catalog.ts";
import { createCatalogPriceSource } from "../../src/token/catalog-price-source.ts";
import { type FerretdbServer, startFerretdb } from "../../test/support/ferretdb.ts";

/** The driver's session and index housekeeping, not the scheduler's work. */
const IGNORED = new Set(["endSessions", "createIndexes", "ping"]);
const catalog = loadCatalog();
const tokens = createCatalogPriceSource({ catalog });
const mintOf = (symbol: string) => catalog.tokens.find((t) => t.symbol === symbol)?.mint;
const numbers = (name: string, fallback: number[]) =>
  process.env[name] === undefined ? fallback : (process.env[name] as string).split(",").map(Number);

/** The simulated executor: what a dry run costs the scheduler, nothing else. */
const simulated = createSimulatedExecutor({ kinds: builtInKinds(), tokens, mintOf });
/** A transfer's traffic to the run store, without the chain: the journal read, the day's cap, one kept transaction. */
const journaled: Executor = {
  async execute(execution) {
    const { journal } = execution;
    await journal.transactions();
    const today = await journal.succeededToday();
    const signature = randomBytes(32).toString("base64url");
    if (!(await journal.record({ signature, lastValidBlockHeight: 1_000n, transaction: "AQID" }))) {
      return { ok: false, error: "lost the slot" };
    }
    return { ok: true, result: { kind: "transfer", signature, usdValue: 1, today: today.length } };
  },
};

export interface SchedulerBenchRow {
  readonly store: string;
  readonly executor: string;
  readonly agents: number;
  readonly replicas: number;
  readonly concurrency: number;
  readonly runs: number;
  readonly seconds: number;
  /** Database commands per run, by `command collection`, and their sum (FerretDB only). */
  readonly commandsPerRun?: Record<string, number>;
  readonly totalPerRun?: number;
}

interface Stores {
  readonly agents: AgentStore;
  readonly runs: RunStore;
  readonly events: EventLog;
  /** Commands sent since the last reset, by `command collection` (database stores only). */
  commands?(): Promise<Map<string, number>>;
  resetCommands?(): Promise<void>;
  close(): Promise<void>;
}

/** When the bench's agents were made: their slots are 01:00 and 02:00 UTC of one day. */
const CREATED_AT = new Date("2031-06-01T00:00:00.000Z");

/** `count` hourly transfer agents, active, their first slot next. */
function dueAgents(count: number): AgentRecord[] {
  return Array.from({ length: count }, (_, i) => ({
    agentId: `bench-${i}-${randomBytes(6).toString("hex")}`,
    owner: `owner-${i % 50}`,
    type: "transfer",
    status: "active",
    config: {
      source: "9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM",
      destination: "2ojv9BAiHUrvsm9gxDe7fJSzbNZSJcxZvf8dqmWGHG8S",
      amount: 1.5,
      token: "USDC",
      schedule: "hourly",
    },
    createdAt: CREATED_AT,
    nextRunAt: slotAt(CREATED_AT, "hourly", 1),
  }));
}

/** Runs every agent's due slot with `replicas` schedulers; resolves with the runs and the time taken. */
async function runAll(
  stores: Stores,
  options: { agents: number; replicas: number; concurrency: number; executor: Executor; now: () => Date },
): Promise<{ runs: number; seconds: number }> {
  let runs = 0;
  let failed = 0;
  let allDone: () => void = () => {};
  const done = new Promise<void>((resolve) => {
    allDone = resolve;
  });
  const schedulers: Scheduler[] = Array.from({ length: options.replicas }, (_, i) =>
    createScheduler({
      agents: stores.agents,
      runs: stores.runs,
      executor: options.executor,
      clock: createScheduleClock({ scale: 1 }),
      checkRunnable: async () => undefined,
      worker: `bench-${i}`,
      concurrency: options.concurrency,
      pollIntervalMs: 1_000,
      leaseMs: 30_000,
      attemptTimeoutMs: 20_000,
      maxAttempts: 3,
      retryBaseMs: 10,
      retryMaxMs: 100,
      maxConsecutiveFailures: 3,
      now: options.now,
      runEvents: createRunAnnouncer({ log: stores.events }),
      events: {
        onRun(run) {
          if (run.outcome === "succeeded") runs++;
          else failed++;
          if (runs === options.agents) allDone();
        },
        onError(error, what) {
          console.warn(`scheduler: ${what}: ${error instanceof Error ? error.message : String(error)}`);
        },
      },
    }),
  );
  const started = performance.now();
  for (const s of schedulers) s.start();
  const timeout = setTimeout(allDone, 600_000);
  await done;
  const seconds = (performance.now() - started) / 1000;
  clearTimeout(timeout);
  await Promise.all(schedulers.map((s) => s.stop(5_000)));
  if (runs < options.agents) console.warn(`only ${runs} of ${options.agents} runs within 10 minutes`);
  if (failed > 0) console.warn(`${failed} failed attempts`);
  return { runs, seconds };
}

function memoryStores(): Stores {
  const events = createMemoryEventLog();
  return {
    agents: createAnnouncingAgentStore({ store: createMemoryAgentStore(), log: events }),
    runs: createMemoryRunStore(),
    events,
    close: async () => {},
  };
}

async function ferretStores(uri: string): Promise<Stores> {
  const [{ createMongoAgentStore }, { createMongoRunStore }, { createMongoEventLog }] = await Promise.all([
    import("../../src/agent/mongo-agent-store.ts"),
    import("../../src/scheduler/mongo-run-store.ts"),
    import("../../src/events/mongo-event-log.ts"),
  ]);
  const store = await createMongoAgentStore({
    uri,
    dbName: `bench_scheduler_${randomBytes(3).toString("hex")}`,
    monitorCommands: true,
  });
  const events = createMongoEventLog({ db: store.db, guard: store.guard });
  // The service's own counter: mongodb_commands_total{command,collection}, read before and after.
  const registry = new Registry();
  registerMongoCommandMetrics(store.client, registry);
  const read = async () => {
    const metric = await registry.getSingleMetric("mongodb_commands_total")?.get();
    const counts = new Map<string, number>();
    for (const { labels, value } of metric?.values ?? []) {
      if (IGNORED.has(String(labels.command))) continue;
      counts.set(`${labels.command} ${labels.collection}`.trim(), value);
    }
    return counts;
  };
  let before = new Map<string, number>();
  return {
    agents: createAnnouncingAgentStore({ store, log: events }),
    runs: createMongoRunStore({ db: store.db, guard: store.guard }),
    events,
    async commands() {
      const spent = new Map<string, number>();
      for (const [key, n] of await read()) {
        const since = n - (before.get(key) ?? 0);
        if (since > 0) spent.set(key, since);
      }
      return spent;
    },
    async resetCommands() {
      before = await read();
    },
    async close() {
      await store.db.dropDatabase();
      await store.close();
    },
  };
}

async function measure(
  makeStores: () => Promise<Stores>,
  store: string,
  options: { agents: number; replicas: number; concurrency: number; executor: [string, Executor] },
): Promise<SchedulerBenchRow> {
  const stores = await makeStores();
  try {
    const records = dueAgents(options.agents);
    for (let i = 0; i < records.length; i += 100) {
      await Promise.all(records.slice(i, i + 100).map((record) => stores.agents.create({ record })));
    }
    // The first slot, unmeasured; then the second, the same UTC day: the steady state, in which a
    // transfer's cap per day finds the agent's earlier success.
    const executor = options.executor[1];
    let at = slotAt(CREATED_AT, "hourly", 1);
    const now = () => at;
    await runAll(stores, { ...options, executor, now });
    at = slotAt(CREATED_AT, "hourly", 2);
    await stores.resetCommands?.();
    const { runs, seconds } = await runAll(stores, { ...options, executor, now });
    const row: SchedulerBenchRow = {
      store,
      executor: options.executor[0],
      agents: options.agents,
      replicas: options.replicas,
      concurrency: options.concurrency,
      runs,
      seconds,
    };
    const commands = await stores.commands?.();
    if (commands === undefined || runs === 0) return row;
    const perRun = Object.fromEntries(
      [...commands].sort((a, b) => b[1] - a[1]).map(([key, n]) => [key, Math.round((n / runs) * 100) / 100]),
    );
    const total = [...commands.values()].reduce((sum, n) => sum + n, 0) / runs;
    return { ...row, commandsPerRun: perRun, totalPerRun: Math.round(total * 100) / 100 };
  } finally {
    await stores.close();
  }
}

/** Every configured measurement; prints each row as it comes. */
export async function schedulerFigures(ferretUri?: string): Promise<SchedulerBenchRow[]> {
  const storesWanted = (process.env.BENCH_SCHEDULER_STORES ?? "memory,FerretDB").split(",");
  const concurrency = Number(process.env.BENCH_SCHEDULER_CONCURRENCY ?? 16);
  const rows: SchedulerBenchRow[] = [];
  const report = (row: SchedulerBenchRow) => {
    rows.push(row);
    console.log(describe(row));
  };
  if (storesWanted.includes("memory")) {
    // A first pass warms the JIT up.
    await measure(async () => memoryStores(), "memory", {
      agents: 1000,
      replicas: 1,
      concurrency,
      executor: ["simulated", simulated],
    });
    for (const agents of numbers("BENCH_SCHEDULER_AGENTS", [1000, 5000])) {
      for (const executor of [
        ["simulated", simulated],
        ["journal", journaled],
      ] as [string, Executor][]) {
        report(
          await measure(async () => memoryStores(), "memory", { agents, replicas: 1, concurrency, executor }),
        );
      }
    }
  }
  if (storesWanted.includes("FerretDB")) {
    const ferret: FerretdbServer | undefined = ferretUri === undefined ? await startFerretdb() : undefined;
    const uri = ferretUri ?? (ferret as FerretdbServer).uri;
    try {
      for (const agents of numbers("BENCH_SCHEDULER_AGENTS", [1000])) {
        for (const replicas of numbers("BENCH_SCHEDULER_REPLICAS", [1, 3])) {
          for (const executor of [
            ["simulated", simulated],
            ["journal", journaled],
          ] as [string, Executor][]) {
            report(
              await measure(() => ferretStores(uri), "FerretDB", { agents, replicas, concurrency, executor }),
            );
          }
        }
      }
    } finally {
      await ferret?.stop();
    }
  }
  return rows;
}

export function describe(row: SchedulerBenchRow): string {
  const rate = row.runs / row.seconds;
  let line =
    `scheduler on ${row.store}, ${row.executor} executor: ${row.agents} agents due at once, ` +
    `${row.replicas} replica(s) x concurrency ${row.concurrency}: ${row.runs} runs in ${row.seconds.toFixed(2)} s, ` +
    `${rate.toFixed(0)} runs/s`;
  if (row.store === "memory") line += ` (goal >= 2,000 runs/s: ${rate >= 2000 ? "met" : "MISSED"})`;
  if (row.totalPerRun !== undefined) {
    line +=
      `; ${row.totalPerRun} database commands per run (goal <= 8: ${row.totalPerRun <= 8 ? "met" : "MISSED"}): ` +
      Object.entries(row.commandsPerRun ?? {})
        .map(([key, n]) => `${key} ${n}`)
        .join(", ");
  }
  return line;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await schedulerFigures();
}

/**
 * WatchAgentEvents end to end: every change the service makes to an agent is announced, by
 * whichever replica makes it, and a watcher on any replica sees it. On the memory store one
 * server does everything; on MongoDB (FerretDB) two servers share the database as two replicas:
 * one runs the scheduler (it activates and runs agents), the watcher is connected to the other,
 * and the owner's calls alternate between them. Then a watcher that drops and resumes with its
 * last cursor sees every event exactly once.
 */
import { randomBytes } from "node:crypto";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { describe, expect, inject, it } from "vitest";
import { AgentService } from "../gen/agent/v1/agent_pb.ts";
import { SWAP } from "./support/agent-fixtures.ts";
import { useCleanups } from "./support/cleanups.ts";
import { type RunningServer, startServer } from "./support/start-server.ts";

const cleanup = useCleanups();
/** Hourly agents run every real second. */
const SCHEDULER_ENV = {
  SCHEDULER_ENABLED: "true",
  // Events, not the chain: swaps run simulated (on the chain they would wait for an approval).
  TRANSFER_EXECUTOR: "simulated",
  SCHEDULE_TIME_SCALE: "3600",
  SCHEDULER_POLL_INTERVAL_MS: "100",
  EVENT_POLL_INTERVAL_MS: "50",
};

const STORES: [string, () => Record<string, string> | undefined][] = [
  ["memory", () => undefined],
  [
    "mongo",
    () => ({
      MONGODB_URI: inject("mongoUri"),
      MONGODB_DB: `agent_events_test_${randomBytes(3).toString("hex")}`,
    }),
  ],
];

interface Seen {
  cursor: number;
  type: string;
  agentId: string;
  runId?: string;
}

/** Collects a watcher's events in the background until aborted. */
function watch(server: RunningServer, request: { agentId?: string; after?: string }) {
  const client = createClient(AgentService, createGrpcTransport({ baseUrl: server.baseUrl }));
  const abort = new AbortController();
  const seen: Seen[] = [];
  const done = (async () => {
    for await (const message of client.watchAgentEvents(request, { signal: abort.signal })) {
      const e = message.data;
      if (e === undefined) continue;
      seen.push({ cursor: Number(e.cursor), type: e.type, agentId: e.agentId, runId: e.run?.runId });
    }
  })().catch(() => {});
  cleanup(async () => abort.abort());
  return { seen, stop: () => abort.abort(), done };
}

async function until(probe: () => boolean, what: string, ms = 15_000): Promise<void> {
  const deadline = performance.now() + ms;
  while (!probe()) {
    if (performance.now() > deadline) throw new Error(`not within ${ms} ms: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

describe.each(STORES)("agent events on the %s store", (_name, storeEnv) => {
  it("announces creation, activation, runs, pause, resume and deletion to a watcher on another replica", async () => {
    const shared = storeEnv();
    const runner = await startServer({ env: { ...shared, ...SCHEDULER_ENV } });
    cleanup(() => runner.close());
    const other =
      shared === undefined ? runner : await startServer({ env: { ...shared, EVENT_POLL_INTERVAL_MS: "50" } });
    if (other !== runner) cleanup(() => other.close());
    const watcher = watch(other, {});
    await until(() => other.streamStats().events.live === 1, "the watcher is live");

    const onRunner = createClient(AgentService, createGrpcTransport({ baseUrl: runner.baseUrl }));
    const onOther = createClient(AgentService, createGrpcTransport({ baseUrl: other.baseUrl }));
    const created = await onOther.createAgent({ type: SWAP.type, config: SWAP.config });
    const agentId = created.data?.agentId as string;
    const mine = () => watcher.seen.filter((e) => e.agentId === agentId);
    await until(() => mine().some((e) => e.type === "run.succeeded"), "a run succeeded");
    await onOther.pauseAgent({ agentId });
    await onOther.pauseAgent({ agentId }); // no change, no event
    await onRunner.resumeAgent({ agentId });
    await onOther.deleteAgent({ agentId });
    await until(() => mine().some((e) => e.type === "agent.deleted"), "the deletion");
    await new Promise((resolve) => setTimeout(resolve, 300)); // nothing more may come

    const types = mine().map((e) => e.type);
    const lifecycle = types.filter((t) => t.startsWith("agent."));
    expect(lifecycle).toEqual([
      "agent.created",
      "agent.activated",
      "agent.paused",
      "agent.resumed",
      "agent.deleted",
    ]);
    // Every run started before it finished, once each.
    const runs = mine().filter((e) => e.type.startsWith("run."));
    const finished = runs.filter((e) => e.type === "run.succeeded");
    expect(finished.length).toBeGreaterThan(0);
    for (const run of finished) {
      const started = runs.findIndex((e) => e.type === "run.started" && e.runId === run.runId);
      expect(started, `run ${run.runId} started`).toBeGreaterThanOrEqual(0);
      expect(started).toBeLessThan(runs.indexOf(run));
    }
    // Cursors strictly increase: no duplicate, in log order.
    const cursors = watcher.seen.map((e) => e.cursor);
    expect(cursors).toEqual([...new Set(cursors)].sort((a, b) => a - b));
    // What the watcher saw is exactly what the log holds for the agent.
    const logged = (await other.context.events.after(0, 10_000, { owner: "anonymous", agentId })).map(
      (e) => e.seq,
    );
    expect(mine().map((e) => e.cursor)).toEqual(logged);
  });

  it("a watcher that drops and resumes with its last cursor sees every event exactly once", async () => {
    const server = await startServer({ env: { ...storeEnv(), ...SCHEDULER_ENV } });
    cleanup(() => server.close());
    const client = createClient(AgentService, createGrpcTransport({ baseUrl: server.baseUrl }));
    for (let i = 0; i < 5; i++) await client.createAgent({ type: SWAP.type, config: SWAP.config });
    // Runs go on while the watcher drops and resumes ten times.
    const all: Seen[] = [];
    let after = "0";
    for (let round = 0; round < 10; round++) {
      const w = watch(server, { after });
      await until(() => w.seen.length >= 3, "some events");
      w.stop();
      await w.done;
      all.push(...w.seen);
      after = String(w.seen.at(-1)?.cursor);
    }
    const cursors = all.map((e) => e.cursor);
    const logged = (await server.context.events.after(0, 100_000)).map((e) => e.seq);
    expect(cursors).toEqual(logged.slice(0, cursors.length));
  });

  it("a reconnect storm: 1,000 watchers cancelled at once and resumed with their cursors see every event exactly once", async () => {
    const server = await startServer({
      env: {
        ...storeEnv(),
        EVENT_POLL_INTERVAL_MS: "50",
        STREAM_MAX_PER_KEY: "5000",
        HTTP2_MAX_CONCURRENT_STREAMS: "2000",
        // 1,000 resumes at once read the log together; on a busy two-core machine one read may
        // wait longer than the default 5 s, which is a slow machine, not a lost event.
        MONGODB_OPERATION_TIMEOUT_MS: "30000",
      },
    });
    cleanup(() => server.close());
    const log = server.context.events;
    const transports = Array.from({ length: 4 }, () => createGrpcTransport({ baseUrl: server.baseUrl }));
    const EVENTS = 60;
    const WATCHERS = 1_000;
    const append = (n: number) =>
      log.append({
        type: "run.succeeded",
        owner: "anonymous",
        agentId: `storm-${n % 7}`,
        at: new Date(),
        key: `storm-${n}`,
      });
    /** Every watcher's cursors, and the controller of its current stream. */
    const watchers = Array.from({ length: WATCHERS }, () => ({
      cursors: [] as number[],
      abort: new AbortController(),
    }));
    const running = watchers.map(async (w, i) => {
      const client = createClient(AgentService, transports[i % transports.length] as (typeof transports)[0]);
      let after = "0";
      // Resumes with its last cursor whenever its stream is cancelled, until it has every event.
      while (w.cursors.length < EVENTS) {
        try {
          for await (const message of client.watchAgentEvents({ after }, { signal: w.abort.signal })) {
            if (message.data === undefined) continue;
            w.cursors.push(Number(message.data.cursor));
            after = message.data.cursor;
            if (w.cursors.length === EVENTS) break;
          }
        } catch {
          w.abort = new AbortController();
        }
      }
      // Leaving the loop does not cancel the call; the watcher hangs up.
      w.abort.abort();
    });
    for (let n = 0; n < EVENTS; n++) {
      await append(n);
      if (n % 10 === 9) await new Promise((resolve) => setTimeout(resolve, 50));
      // The storm: every stream cancelled at once, twice, while events keep coming.
      if (n === 20 || n === 40) for (const w of watchers) w.abort.abort();
    }
    await Promise.all(running);
    const logged = (await log.after(0, 1_000_000)).map((e) => e.seq);
    expect(logged.length).toBe(EVENTS);
    for (const w of watchers) expect(w.cursors).toEqual(logged);
    await until(() => server.streamStats().slots.streams === 0, "every stream released");
    expect(server.streamStats().events).toEqual({ watches: 0, live: 0, timer: false });
  }, 90_000);
});

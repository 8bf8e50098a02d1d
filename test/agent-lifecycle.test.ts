/**
 * The agent lifecycle through the RPCs, over every protocol, on the memory store and on MongoDB
 * (FerretDB): a created agent becomes active and runs, its owner pauses and resumes it, reads its
 * run history, and transitions that make no sense answer failed_precondition naming the status.
 * Schedule time runs 3600 times faster (SCHEDULE_TIME_SCALE), so an hourly agent runs every real
 * second; the exact slot rules are tested with an injected clock in scheduler.test.ts.
 */
import { randomBytes } from "node:crypto";
import type { JsonValue } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { AgentService } from "../gen/agent/v1/agent_pb.ts";
import { SWAP, TRANSFER_CONFIG } from "./support/agent-fixtures.ts";
import { createProtocols, type Outcome, type Protocol, withStructConfig } from "./support/callers.ts";
import { type RunningServer, startServer } from "./support/start-server.ts";

const TRANSFER = { type: "transfer", config: { ...TRANSFER_CONFIG, schedule: "hourly" } };

const SCHEDULER_ENV = {
  SCHEDULER_ENABLED: "true",
  // The lifecycle, not the chain: transfers move nothing here (transfer-agent.test.ts moves tokens).
  TRANSFER_EXECUTOR: "simulated",
  SCHEDULE_TIME_SCALE: "3600",
  SCHEDULER_POLL_INTERVAL_MS: "100",
};

type Json = Record<string, JsonValue>;

function dataOf(outcome: Outcome): Json {
  if (!outcome.ok) throw new Error(`expected success, got code ${outcome.code}: ${outcome.message}`);
  expect(outcome.json.success).toBe(true);
  return outcome.json.data as Json;
}

/** Polls `probe` until it returns a value; fails after `ms`. */
async function until<T>(probe: () => Promise<T | undefined>, ms: number, what: string): Promise<T> {
  const deadline = performance.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (performance.now() > deadline) throw new Error(`not within ${ms} ms: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const STORES: [string, () => Record<string, string>][] = [
  ["memory", () => ({})],
  [
    "mongo",
    () => ({
      MONGODB_URI: inject("mongoUri"),
      MONGODB_DB: `lifecycle_test_${randomBytes(3).toString("hex")}`,
    }),
  ],
];

describe.each(STORES)("agent lifecycle on the %s store", (storeName, storeEnv) => {
  let running: RunningServer;
  let idle: RunningServer;
  let protocols: Protocol[];
  let idleProtocols: Protocol[];

  beforeAll(async () => {
    const env = storeEnv();
    running = await startServer({ env: { ...env, ...SCHEDULER_ENV } });
    // A server without a scheduler, on a database of its own (the other server's scheduler would
    // activate agents in a shared one): its new agents stay pending.
    idle = await startServer({ env: storeEnv() });
    protocols = createProtocols(running.baseUrl).map(withStructConfig);
    idleProtocols = createProtocols(idle.baseUrl).map(withStructConfig);
  });

  afterAll(async () => {
    for (const p of [...protocols, ...idleProtocols]) p.close();
    if (storeName === "mongo") {
      for (const server of [running, idle]) {
        await server.context.mongoClient?.db(server.context.config.mongo?.dbName).dropDatabase();
      }
    }
    await idle.close();
    await running.close();
  });

  const protocolIndexes = [0, 1, 2, 3, 4];

  it.each(protocolIndexes)("protocol %#: active, runs, pause, resume, run history", async (i) => {
    const p = protocols[i] as Protocol;
    const created = dataOf(await p.call(AgentService, "CreateAgent", i % 2 === 0 ? TRANSFER : SWAP));
    const agentId = created.agentId as string;
    expect(created.status).toBe("pending");

    const ran = await until(
      async () => {
        const detail = dataOf(await p.call(AgentService, "GetAgent", { agentId }));
        return detail.status === "active" && detail.lastRunAt !== undefined ? detail : undefined;
      },
      15_000,
      "the agent is active and has run",
    );
    expect(ran.nextRunAt).toBeDefined();
    expect(ran.failureReason).toBeUndefined();

    const runs = dataOf(await p.call(AgentService, "ListAgentRuns", { agentId }));
    expect(runs.limit).toBe(10);
    expect(runs.offset).toBe(0);
    const list = runs.runs as Json[];
    expect(list.length).toBeGreaterThan(0);
    expect(runs.total).toBeGreaterThanOrEqual(list.length);
    const first = list[0] as Json;
    expect(first).toMatchObject({ agentId, attempt: 1, outcome: "succeeded" });
    expect(first.result).toMatchObject(
      i % 2 === 0 ? { kind: "transfer", amount: 1.5, token: "USDC" } : { kind: "swap", inputToken: "USDC" },
    );
    expect(first.error).toBeUndefined();
    const slots = list.map((r) => Date.parse(r.scheduledAt as string));
    expect(slots).toEqual([...slots].sort((a, b) => b - a)); // newest first

    const paused = dataOf(await p.call(AgentService, "PauseAgent", { agentId }));
    expect(paused.status).toBe("paused");
    expect(paused.nextRunAt).toBeUndefined();
    // A harmless repeat.
    expect(dataOf(await p.call(AgentService, "PauseAgent", { agentId })).status).toBe("paused");

    const resumedAt = Date.now();
    const resumed = dataOf(await p.call(AgentService, "ResumeAgent", { agentId }));
    expect(resumed.status).toBe("active");
    // The next slot after now (missed ones skipped): within one schedule hour, one real second.
    const next = Date.parse(resumed.nextRunAt as string);
    expect(next).toBeGreaterThan(resumedAt - 5);
    expect(next).toBeLessThanOrEqual(Date.now() + 1_000);
    expect(dataOf(await p.call(AgentService, "ResumeAgent", { agentId })).status).toBe("active");

    const filtered = dataOf(await p.call(AgentService, "ListAgents", { status: "active", limit: 100 }));
    expect((filtered.agents as Json[]).some((a) => a.agentId === agentId)).toBe(true);
    await p.call(AgentService, "DeleteAgent", { agentId });
  });

  it.each(protocolIndexes)("protocol %#: transitions that make no sense, and unknown agents", async (i) => {
    const p = idleProtocols[i] as Protocol;
    const created = dataOf(await p.call(AgentService, "CreateAgent", TRANSFER));
    const agentId = created.agentId as string;
    for (const method of ["PauseAgent", "ResumeAgent"]) {
      const outcome = await p.call(AgentService, method, { agentId });
      expect(outcome.ok).toBe(false);
      if (outcome.ok) continue;
      expect(outcome.code).toBe(Code.FailedPrecondition);
      expect(outcome.message).toContain("is pending");
    }
    for (const method of ["PauseAgent", "ResumeAgent", "ListAgentRuns"]) {
      const outcome = await p.call(AgentService, method, { agentId: "noSuchAgent0000000000a" });
      expect(outcome.ok ? 0 : outcome.code, method).toBe(Code.NotFound);
      const empty = await p.call(AgentService, method, { agentId: "" });
      expect(empty.ok ? 0 : empty.code, method).toBe(Code.InvalidArgument);
    }
    const tooMany = await p.call(AgentService, "ListAgentRuns", { agentId, limit: 101 });
    expect(tooMany.ok ? 0 : tooMany.code).toBe(Code.InvalidArgument);
    const none = dataOf(await p.call(AgentService, "ListAgentRuns", { agentId }));
    expect(none).toEqual({ runs: [], total: 0, limit: 10, offset: 0 });
    const failedFilter = dataOf(await p.call(AgentService, "ListAgents", { status: "failed" }));
    expect(failedFilter.agents).toEqual([]);
    await p.call(AgentService, "DeleteAgent", { agentId });
  });
});

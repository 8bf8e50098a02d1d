/**
 * Exactly once across real replicas: three service processes (`src/main.ts`) share one database,
 * 200 hourly agents run at a schedule time scale that puts their slots seconds apart, one process
 * is killed (SIGKILL) and another stopped (SIGTERM) in the middle. Afterwards every (agent, slot)
 * up to a cutoff has exactly one succeeded run: none missing, none twice. Attempts fail now and
 * then (SIMULATED_FAILURE_RATE), so retries are part of it. The database is a FerretDB of its own:
 * beside transfer-replicas on the shared one, a CI run's creates waited 36 s and then met
 * `unavailable`, and the other test's survivors did not catch up in time.
 */
import { randomBytes } from "node:crypto";
import { MongoClient } from "mongodb";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createScheduleClock } from "../src/scheduler/schedule-clock.ts";
import { slotAt } from "../src/scheduler/slots.ts";
import { type FerretdbServer, startFerretdb } from "./support/ferretdb.ts";
import { type MainProcess, startMain } from "./support/main-process.ts";

const AGENTS = 200;
const SLOTS = 5;
/** An hour of schedule time every 6 real seconds. */
const SCALE = 600;
const SLOT_MS = 3_600_000 / SCALE;

const dbName = `replicas_test_${randomBytes(3).toString("hex")}`;
const processes: MainProcess[] = [];
let server: FerretdbServer;
let client: MongoClient;

beforeAll(async () => {
  server = await startFerretdb();
  client = new MongoClient(server.uri, { serverSelectionTimeoutMS: 2000 });
});
afterAll(async () => {
  for (const p of processes) p.kill();
  await client?.close();
  await server?.stop();
});

/** REPLICAS_DEBUG=1 prints progress while the survivor catches up. */
const DEBUG = process.env.REPLICAS_DEBUG !== undefined;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * CreateAgent under its idempotency key, asked again while the service answers `unavailable` (503:
 * its store did not answer in time, which a loaded machine can cause), as a client should: the key
 * makes a create that did land count once.
 */
async function createAgent(port: number, i: number): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    const res = await createOnce(port, i);
    if (res.status !== 503 || attempt === 20) {
      expect(res.status, await res.clone().text()).toBe(200);
      return;
    }
    await sleep(250 * attempt);
  }
}

async function createOnce(port: number, i: number): Promise<Response> {
  return fetch(`http://127.0.0.1:${port}/agent.v1.AgentService/CreateAgent`, {
    method: "POST",
    headers: { "content-type": "application/json", "idempotency-key": `replica-test-${i}` },
    body: JSON.stringify({
      type: i % 2 === 0 ? "transfer" : "swap",
      config:
        i % 2 === 0
          ? {
              source: "9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM",
              destination: "2ojv9BAiHUrvsm9gxDe7fJSzbNZSJcxZvf8dqmWGHG8S",
              amount: 1 + i,
              token: "USDC",
              schedule: "hourly",
            }
          : {
              wallet: "9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM",
              inputToken: "USDC",
              outputToken: "SOL",
              amount: 10 + i,
              schedule: "hourly",
            },
    }),
  });
}

it("three replicas, SIGKILL one and SIGTERM another: every (agent, slot) has exactly one succeeded run", async () => {
  const env = {
    MONGODB_URI: server.uri,
    MONGODB_DB: dbName,
    LOG_LEVEL: "info",
    SCHEDULE_TIME_SCALE: String(SCALE),
    SCHEDULER_POLL_INTERVAL_MS: "500",
    SCHEDULER_LEASE_MS: "4000",
    SCHEDULER_CONCURRENCY: "16",
    SCHEDULER_MAX_ATTEMPTS: "10",
    SCHEDULER_RETRY_BASE_MS: "20",
    SCHEDULER_RETRY_MAX_MS: "200",
    // The scheduler's guarantees under simulated faults; transfer-replicas.slow.test.ts moves tokens.
    TRANSFER_EXECUTOR: "simulated",
    SIMULATED_FAILURE_RATE: "0.05",
    // Runs take a while, so the killed replica dies holding leases the others must take over.
    SIMULATED_LATENCY_MS: "150",
    SHUTDOWN_TIMEOUT_MS: "5000",
  };
  // Replicas start at different moments; they agree on schedule time all the same.
  const a = await startMain(env);
  processes.push(a);
  for (let i = 0; i < AGENTS; i += 10) {
    await Promise.all(Array.from({ length: 10 }, (_, j) => createAgent(a.port, i + j)));
  }
  const [b, c] = await Promise.all([startMain(env), startMain(env)]);
  processes.push(b, c);

  const agents = client.db(dbName).collection<{ _id: string; createdAt: Date; nextRunAt?: Date }>("agents");
  const docs = await agents.find({}).toArray();
  expect(docs).toHaveLength(AGENTS);
  const clock = createScheduleClock({ scale: SCALE });
  const slotsOf = (createdAt: Date) =>
    Array.from({ length: SLOTS }, (_, k) =>
      clock.toReal(slotAt(clock.toSchedule(createdAt), "hourly", k + 1)),
    );
  const lastCreated = Math.max(...docs.map((d) => d.createdAt.getTime()));
  const cutoff = lastCreated + SLOTS * SLOT_MS;

  // A crash in the middle of slot 2, and a graceful stop in the middle of slot 3.
  await sleep(lastCreated + 1.5 * SLOT_MS - Date.now());
  a.child.kill("SIGKILL");
  await sleep(lastCreated + 2.5 * SLOT_MS - Date.now());
  b.child.kill("SIGTERM");
  expect((await b.exited).code).toBe(0);

  // The survivor catches up to the cutoff.
  const deadline = Date.now() + 180_000;
  for (;;) {
    const behind = await agents.countDocuments({ nextRunAt: { $lte: new Date(cutoff) } });
    if (behind === 0) break;
    if (DEBUG) {
      const done = await client.db(dbName).collection("agent_runs").countDocuments({});
      console.log(
        `${Math.round((Date.now() - lastCreated) / 1000)} s: ${behind} agents behind, ${done} runs`,
      );
    }
    expect(Date.now(), "the survivor catches up within 180 s").toBeLessThan(deadline);
    await sleep(DEBUG ? 5_000 : 500);
  }

  const runs = await client
    .db(dbName)
    .collection<{ agentId: string; scheduledAt: Date; outcome: string }>("agent_runs")
    .find({})
    .toArray();
  const succeeded = new Map<string, number>();
  for (const run of runs) {
    if (run.outcome !== "succeeded") continue;
    const key = `${run.agentId}@${run.scheduledAt.getTime()}`;
    succeeded.set(key, (succeeded.get(key) ?? 0) + 1);
  }
  let expected = 0;
  let missing = 0;
  for (const doc of docs) {
    for (const slot of slotsOf(doc.createdAt)) {
      if (slot.getTime() > cutoff) continue;
      expected++;
      if (!succeeded.has(`${doc._id}@${slot.getTime()}`)) missing++;
    }
  }
  const duplicated = [...succeeded.values()].filter((n) => n > 1).length;
  const failedAttempts = runs.filter((r) => r.outcome === "failed").length;
  const takeovers = await client
    .db(dbName)
    .collection("agent_run_claims")
    .countDocuments({ generation: { $gt: 0 } });
  const killedLog = a
    .stdout()
    .split("\n")
    .filter((l) => l.includes('"agent run"')).length;
  console.log(
    `replicas: ${AGENTS} agents, ${expected} (agent, slot) pairs due by the cutoff, ` +
      `${succeeded.size} with a succeeded run, ${missing} missing, ${duplicated} duplicated, ` +
      `${failedAttempts} failed attempts retried, ${takeovers} leases taken over (the killed replica logged ${killedLog} runs)`,
  );
  expect(expected).toBeGreaterThanOrEqual(AGENTS * SLOTS);
  expect(missing).toBe(0);
  expect(duplicated).toBe(0);
}, 300_000);

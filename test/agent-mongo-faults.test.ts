/**
 * The agent service against a MongoDB that goes away: a PRIVATE FerretDB per test, killed (SIGKILL,
 * a crash) and restarted underneath the running server. While it is down, agent calls must fail
 * fast with `unavailable` and a message free of driver text, and /readyz must answer 503; once it is
 * back, the same server must serve again, with the agents written before the outage. Token calls
 * never depend on the database.
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { DescService, JsonValue } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { AgentService } from "../gen/agent/v1/agent_pb.ts";
import { TokenService } from "../gen/token/v1/token_pb.ts";
import { createProtocols, type Outcome, type Protocol } from "./support/callers.ts";
import { useCleanups } from "./support/cleanups.ts";
import { writeDelegateSeed } from "./support/executor-keypair.ts";
import { type FerretdbServer, startFerretdb } from "./support/ferretdb.ts";
import { type RunningServer, startServer } from "./support/start-server.ts";

/** A call that has not answered by then is taken to hang. Loose: not a performance assertion. */
const CALL_DEADLINE_MS = 5_000;
/** How long the server may take to serve again once the database is back. */
const RECOVERY_DEADLINE_MS = 30_000;
/** Text that would betray the driver, the topology or the database's address. */
const DRIVER_TEXT = [/mongo/i, /ECONN/, /127\.0\.0\.1/, /topology/i, /server selection/i, /socket/i];

const TRANSFER = {
  source: "So11111111111111111111111111111111111111112",
  destination: "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v",
  amount: 3,
  token: "USDC",
  schedule: "daily",
};

/** The protocols checked here: Connect JSON and gRPC, through connect-node and through grpc-js. */
const CHECKED = ["connect+json (HTTP/1.1)", "grpc (HTTP/2)", "grpc-js (independent client)"];

type Json = Record<string, unknown>;

/** Everything a test started, stopped after it whatever happened. */
const defer = useCleanups();

async function privateDb(): Promise<FerretdbServer> {
  const db = await startFerretdb();
  defer(() => db.stop());
  return db;
}

interface Service {
  readonly server: RunningServer;
  readonly protocols: Protocol[];
  close(): Promise<void>;
}

const DELEGATE_SEED_FILE = join(mkdtempSync(join(tmpdir(), "mongo-faults-")), "delegate.seed");
writeDelegateSeed(DELEGATE_SEED_FILE);

async function startService(
  db: FerretdbServer,
  dbName: string,
  env: Record<string, string> = {},
): Promise<Service> {
  const server = await startServer({
    env: {
      MONGODB_URI: db.uri,
      MONGODB_DB: dbName,
      MONGODB_SERVER_SELECTION_TIMEOUT_MS: "500",
      // One delegates' secret for every service of the test, as replicas and restarts share it:
      // the delegates a pending agent names stay the same across a restart.
      DELEGATE_SEED: DELEGATE_SEED_FILE,
      ...env,
    },
  });
  const protocols = createProtocols(server.baseUrl).filter((p) => CHECKED.includes(p.name));
  expect(protocols.map((p) => p.name)).toEqual(CHECKED);
  let closed = false;
  const service = {
    server,
    protocols,
    async close() {
      if (closed) return;
      closed = true;
      for (const p of protocols) p.close();
      await server.close();
    },
  };
  defer(() => service.close());
  return service;
}

const freshDbName = () => `faults_${process.pid}_${randomBytes(4).toString("hex")}`;

/** grpc-js takes google.protobuf.Struct in its message form. */
function forProtocol(protocol: Protocol, request: Json): Json {
  if (!protocol.name.startsWith("grpc-js") || typeof request.config !== "object") return request;
  const config = request.config as Record<string, string | number>;
  const fields = Object.fromEntries(
    Object.entries(config).map(([k, v]) => [
      k,
      typeof v === "number" ? { numberValue: v } : { stringValue: v },
    ]),
  );
  return { ...request, config: { fields } };
}

/** The call's outcome and how long it took; fails if it has not answered within the deadline. */
async function timed(
  protocol: Protocol,
  method: string,
  request: Json,
  service: DescService = AgentService,
): Promise<{ outcome: Outcome; ms: number }> {
  const started = performance.now();
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`${method} over ${protocol.name} did not answer within ${CALL_DEADLINE_MS} ms`)),
      CALL_DEADLINE_MS,
    );
  });
  try {
    const outcome = await Promise.race([
      protocol.call(service, method, forProtocol(protocol, request)),
      deadline,
    ]);
    return { outcome, ms: performance.now() - started };
  } finally {
    clearTimeout(timer);
  }
}

function dataOf(outcome: Outcome): Record<string, JsonValue> {
  if (!outcome.ok) throw new Error(`expected success, got code ${outcome.code}: ${outcome.message}`);
  return outcome.json.data as Record<string, JsonValue>;
}

async function createAgent(protocol: Protocol): Promise<string> {
  const { outcome } = await timed(protocol, "CreateAgent", { type: "transfer", config: TRANSFER });
  return dataOf(outcome).agentId as string;
}

/** Asserts the outcome is `unavailable` with a message that tells nothing about the driver. */
function expectUnavailable(outcome: Outcome, what: string): void {
  if (outcome.ok) throw new Error(`${what}: expected unavailable, got ${JSON.stringify(outcome.json)}`);
  expect(outcome.code, `${what}: ${outcome.message}`).toBe(Code.Unavailable);
  const message = outcome.message;
  expect(message).not.toBe("");
  for (const pattern of DRIVER_TEXT) expect(message, what).not.toMatch(pattern);
  expect(outcome.violations).toEqual([]);
}

/** Every agent RPC over every checked protocol fails fast with unavailable. */
async function expectAgentsUnavailable(service: Service, knownId: string): Promise<void> {
  const requests: [string, Json][] = [
    ["CreateAgent", { type: "transfer", config: TRANSFER }],
    ["GetAgent", { agentId: knownId }],
    ["ListAgents", {}],
    ["DeleteAgent", { agentId: knownId }],
  ];
  for (const protocol of service.protocols) {
    for (const [method, request] of requests) {
      const { outcome, ms } = await timed(protocol, method, request);
      expectUnavailable(outcome, `${method} over ${protocol.name} after ${Math.round(ms)} ms`);
    }
  }
}

async function readyz(service: Service): Promise<number> {
  const response = await fetch(`${service.server.baseUrl}/readyz`, {
    signal: AbortSignal.timeout(CALL_DEADLINE_MS),
  });
  await response.arrayBuffer();
  return response.status;
}

/** Polls `probe` until it returns true, or fails after the recovery deadline. */
async function eventually(what: string, probe: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + RECOVERY_DEADLINE_MS;
  for (;;) {
    if (await probe()) return;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${RECOVERY_DEADLINE_MS} ms`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

async function expectTokensServe(service: Service): Promise<void> {
  for (const protocol of service.protocols) {
    const { outcome } = await timed(protocol, "GetTokenPrices", { symbol: "SOL" }, TokenService);
    expect((dataOf(outcome) as unknown as { symbol: string }[]).map((t) => t.symbol)).toEqual(["SOL"]);
  }
}

async function getDetail(protocol: Protocol, agentId: string) {
  const { outcome } = await timed(protocol, "GetAgent", { agentId });
  return dataOf(outcome);
}

describe("agents while MongoDB fails", () => {
  it("fail fast with unavailable while the database is down, and serve again once it is back", async () => {
    const db = await privateDb();
    const service = await startService(db, freshDbName());
    const [json] = service.protocols as [Protocol];
    expect(service.server.context.storeKind).toBe("mongodb");

    // Up: works.
    const before = await Promise.all([createAgent(json), createAgent(json), createAgent(json)]);
    const details = await Promise.all(before.map((id) => getDetail(json, id)));
    expect(await readyz(service)).toBe(200);

    // Down, mid-test.
    await db.kill();
    await expectAgentsUnavailable(service, before[0] as string);
    expect(await readyz(service)).toBe(503);
    await expectTokensServe(service);

    // Back, with no restart of the service.
    await db.restart();
    await eventually("GetAgent after the database came back", async () => {
      const { outcome } = await timed(json, "GetAgent", { agentId: before[0] as string });
      return outcome.ok;
    });
    await eventually("/readyz 200 after the database came back", async () => (await readyz(service)) === 200);
    for (const protocol of service.protocols) {
      // The agents from before the outage, unchanged.
      for (const [i, id] of before.entries()) expect(await getDetail(protocol, id)).toEqual(details[i]);
      const { outcome } = await timed(protocol, "ListAgents", { limit: 100 });
      const listed = (dataOf(outcome).agents as { agentId: string }[]).map((a) => a.agentId);
      expect(listed).toEqual(expect.arrayContaining(before));
      // And writes work again.
      const id = await createAgent(protocol);
      const deleted = await timed(protocol, "DeleteAgent", { agentId: id });
      expect(dataOf(deleted.outcome)).toEqual({ deleted: true });
    }
  }, 120_000);

  it("fail with unavailable, not hang, while the database hangs, and serve again once it answers", async () => {
    const db = await privateDb();
    // A hung server costs the driver a timeout per retry and reconnect; the operation timeout
    // bounds the whole call.
    const service = await startService(db, freshDbName(), {
      MONGODB_SOCKET_TIMEOUT_MS: "1000",
      MONGODB_OPERATION_TIMEOUT_MS: "1500",
    });
    const [json] = service.protocols as [Protocol];
    const known = await createAgent(json);
    // The checks below send DeleteAgent(known) while the server hangs: the caller hears
    // `unavailable`, yet the server may still carry the delete out once it runs again (a timed-out
    // call has an unknown outcome). Recovery is therefore read from an agent nothing touches.
    const kept = await createAgent(json);

    await db.pause();
    try {
      await expectAgentsUnavailable(service, known);
      await expectTokensServe(service);
    } finally {
      db.resume();
    }
    await eventually("GetAgent after the database answers again", async () => {
      const { outcome } = await timed(json, "GetAgent", { agentId: kept });
      return outcome.ok;
    });
  }, 120_000);

  it("keep their agents across a restart of the service", async () => {
    const db = await privateDb();
    const dbName = freshDbName();
    const first = await startService(db, dbName);
    const [json] = first.protocols as [Protocol];
    const ids = await Promise.all(Array.from({ length: 5 }, () => createAgent(json)));
    const swap = await timed(json, "CreateAgent", {
      type: "swap",
      config: {
        wallet: TRANSFER.destination,
        inputToken: "sol",
        outputToken: "bonk",
        amount: 1,
        schedule: "monthly",
      },
    });
    ids.push(dataOf(swap.outcome).agentId as string);
    const details = await Promise.all(ids.map((id) => getDetail(json, id)));
    const page = dataOf((await timed(json, "ListAgents", { limit: 100 })).outcome);
    expect(page.total).toBe(ids.length);
    await first.close();

    const second = await startService(db, dbName);
    for (const protocol of second.protocols) {
      for (const [i, id] of ids.entries()) expect(await getDetail(protocol, id)).toEqual(details[i]);
      expect(dataOf((await timed(protocol, "ListAgents", { limit: 100 })).outcome)).toEqual(page);
    }
  }, 60_000);

  it("start while the database is down: tokens serve, agents are unavailable until it is back", async () => {
    const db = await privateDb();
    await db.kill();
    const service = await startService(db, freshDbName());
    const [json] = service.protocols as [Protocol];

    await expectTokensServe(service);
    await expectAgentsUnavailable(service, "AAAAAAAAAAAAAAAAAAAAAA");
    expect(await readyz(service)).toBe(503);

    await db.restart();
    // Polled with a read, so that no create of unknown fate skews the count below.
    await eventually("ListAgents after the database came up", async () => {
      const { outcome } = await timed(json, "ListAgents", {});
      return outcome.ok;
    });
    await eventually("/readyz 200 after the database came up", async () => (await readyz(service)) === 200);
    for (const protocol of service.protocols) {
      const id = await createAgent(protocol);
      expect((await getDetail(protocol, id)).agentId).toBe(id);
    }
    const { outcome } = await timed(json, "ListAgents", {});
    expect(dataOf(outcome).total).toBe(service.protocols.length);
  }, 120_000);
});

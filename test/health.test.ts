/**
 * grpc.health.v1.Health on the real server: Check per service and overall, unknown services, Watch,
 * and the status following the agent store: a PRIVATE FerretDB is killed and restarted under a
 * running server, and the overall and AgentService statuses (and /readyz) must follow it while
 * TokenService, served from the embedded catalog, stays SERVING throughout.
 */
import { randomBytes } from "node:crypto";
import { type Client, Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { describe, expect, it } from "vitest";
import {
  Health,
  type HealthCheckResponse,
  HealthCheckResponse_ServingStatus as ServingStatus,
} from "../gen/health/v1/health_pb.ts";
import { useCleanups } from "./support/cleanups.ts";
import { type FerretdbServer, startFerretdb } from "./support/ferretdb.ts";
import { type RunningServer, startServer } from "./support/start-server.ts";

const TOKEN = "token.v1.TokenService";
const AGENT = "agent.v1.AgentService";
const WEBHOOK = "webhook.v1.WebhookService";
/** How long a status may take to follow the database. Loose: not a performance assertion. */
const FOLLOW_DEADLINE_MS = 20_000;

const defer = useCleanups();

async function server(env: Record<string, string> = {}): Promise<RunningServer> {
  const s = await startServer({ env });
  defer(() => s.close());
  return s;
}

async function privateDb(): Promise<FerretdbServer> {
  const db = await startFerretdb();
  defer(() => db.stop());
  return db;
}

function healthClients(baseUrl: string): { name: string; client: Client<typeof Health> }[] {
  return [
    { name: "grpc", client: createClient(Health, createGrpcTransport({ baseUrl })) },
    {
      name: "connect+json",
      client: createClient(Health, createConnectTransport({ baseUrl, httpVersion: "1.1" })),
    },
  ];
}

const grpcHealth = (baseUrl: string) => createClient(Health, createGrpcTransport({ baseUrl }));

async function check(client: Client<typeof Health>, service: string): Promise<ServingStatus> {
  return (await client.check({ service }, { timeoutMs: 5_000 })).status;
}

/** Polls `read` until it returns `want`, failing with the last value seen after the deadline. */
async function eventually<T>(read: () => Promise<T>, want: T, what: string): Promise<void> {
  const deadline = Date.now() + FOLLOW_DEADLINE_MS;
  let last: T | undefined;
  for (;;) {
    last = await read();
    if (last === want) return;
    if (Date.now() > deadline) {
      throw new Error(`${what}: still ${String(last)} after ${FOLLOW_DEADLINE_MS} ms, want ${String(want)}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** A Watch stream read one message at a time, each within the deadline. */
function watch(client: Client<typeof Health>, service: string) {
  const abort = new AbortController();
  const it = client.watch({ service }, { signal: abort.signal })[Symbol.asyncIterator]();
  defer(async () => abort.abort());
  return {
    async next(): Promise<ServingStatus | "ended"> {
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`no Watch message within ${FOLLOW_DEADLINE_MS} ms`)),
          FOLLOW_DEADLINE_MS,
        );
      });
      try {
        const r: IteratorResult<HealthCheckResponse> = await Promise.race([it.next(), timeout]);
        return r.done === true ? "ended" : r.value.status;
      } finally {
        clearTimeout(timer);
      }
    },
    cancel: () => abort.abort(),
  };
}

const readyz = async (baseUrl: string) => (await fetch(`${baseUrl}/readyz`)).status;

describe("Health on the in-memory store", () => {
  it.each(healthClients("http://127.0.0.1:1").map((c) => c.name))(
    "over %s: overall and every service are SERVING",
    async (name) => {
      const s = await server();
      const client = healthClients(s.baseUrl).find((c) => c.name === name)?.client as Client<typeof Health>;
      expect(await check(client, "")).toBe(ServingStatus.SERVING);
      expect(await check(client, TOKEN)).toBe(ServingStatus.SERVING);
      expect(await check(client, AGENT)).toBe(ServingStatus.SERVING);
    },
  );

  it("Check of an unknown service fails with NOT_FOUND", async () => {
    const s = await server();
    for (const { client } of healthClients(s.baseUrl)) {
      for (const service of ["no.such.Service", "token.v1.tokenservice", "grpc.health.v1.Health "]) {
        const error = await client.check({ service }).then(
          () => undefined,
          (e: unknown) => ConnectError.from(e),
        );
        expect(error?.code, service).toBe(Code.NotFound);
      }
    }
  });

  it("List reports overall and each service", async () => {
    const s = await server();
    const client = grpcHealth(s.baseUrl);
    const list = await client.list({});
    expect(Object.fromEntries(Object.entries(list.statuses).map(([k, v]) => [k, v.status]))).toEqual({
      "": ServingStatus.SERVING,
      [TOKEN]: ServingStatus.SERVING,
      [AGENT]: ServingStatus.SERVING,
      // Webhook endpoints live beside the agents: the same database.
      [WEBHOOK]: ServingStatus.SERVING,
    });
  });

  it("Watch of an unknown service answers SERVICE_UNKNOWN and stays open", async () => {
    const s = await server();
    const client = grpcHealth(s.baseUrl);
    const w = watch(client, "no.such.Service");
    expect(await w.next()).toBe(ServingStatus.SERVICE_UNKNOWN);
    // Still open: a Check on another stream answers while the watch waits.
    expect(await check(client, "")).toBe(ServingStatus.SERVING);
    w.cancel();
  });

  it("at shutdown a watcher receives NOT_SERVING and its stream ends, so the drain is not held up", async () => {
    const shutdownTimeoutMs = 20_000;
    const s = await startServer({ env: { SHUTDOWN_TIMEOUT_MS: String(shutdownTimeoutMs) } });
    const client = grpcHealth(s.baseUrl);
    const w = watch(client, AGENT);
    expect(await w.next()).toBe(ServingStatus.SERVING);
    const started = Date.now();
    const closing = s.close();
    expect(await w.next()).toBe(ServingStatus.NOT_SERVING);
    expect(await w.next()).toBe("ended");
    await closing;
    // Loose bound: a watch that kept the connection open would take the whole shutdown timeout.
    expect(Date.now() - started).toBeLessThan(shutdownTimeoutMs / 2);
  });
});

describe("Health follows the agent store (private FerretDB)", () => {
  it("overall and AgentService go NOT_SERVING while the database is down and come back; TokenService stays SERVING", async () => {
    const db = await privateDb();
    const dbName = `health_${process.pid}_${randomBytes(4).toString("hex")}`;
    const s = await server({
      MONGODB_URI: `${db.uri}${dbName}`,
      MONGODB_SERVER_SELECTION_TIMEOUT_MS: "500",
    });
    const client = grpcHealth(s.baseUrl);
    expect(await check(client, "")).toBe(ServingStatus.SERVING);
    expect(await check(client, AGENT)).toBe(ServingStatus.SERVING);
    expect(await check(client, TOKEN)).toBe(ServingStatus.SERVING);
    expect(await readyz(s.baseUrl)).toBe(200);
    const overall = watch(client, "");
    const token = watch(client, TOKEN);
    expect(await overall.next()).toBe(ServingStatus.SERVING);
    expect(await token.next()).toBe(ServingStatus.SERVING);

    await db.kill();
    expect(await overall.next()).toBe(ServingStatus.NOT_SERVING);
    await eventually(() => check(client, ""), ServingStatus.NOT_SERVING, "overall");
    await eventually(() => check(client, AGENT), ServingStatus.NOT_SERVING, AGENT);
    await eventually(() => check(client, WEBHOOK), ServingStatus.NOT_SERVING, WEBHOOK);
    expect(await check(client, TOKEN)).toBe(ServingStatus.SERVING);
    expect(await readyz(s.baseUrl)).toBe(503);

    await db.restart();
    expect(await overall.next()).toBe(ServingStatus.SERVING);
    await eventually(() => check(client, ""), ServingStatus.SERVING, "overall");
    await eventually(() => check(client, AGENT), ServingStatus.SERVING, AGENT);
    await eventually(() => check(client, WEBHOOK), ServingStatus.SERVING, WEBHOOK);
    await eventually(() => readyz(s.baseUrl), 200, "/readyz");
    expect(await check(client, TOKEN)).toBe(ServingStatus.SERVING);

    // TokenService never changed, so its watch has nothing more to say: its next message is the
    // NOT_SERVING of the shutdown.
    const next = token.next();
    await s.close();
    expect(await next).toBe(ServingStatus.NOT_SERVING);
  });
});

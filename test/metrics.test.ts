/**
 * GET /metrics on the real server: call counters, durations and calls in flight labelled by
 * procedure, protocol and code, the process's own figures, and, with MongoDB (the global setup's
 * server, a database of its own), the driver's connection pool. Two servers run in this process,
 * so each must keep its own registry.
 */
import { randomBytes } from "node:crypto";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { MongoClient } from "mongodb";
import { afterAll, beforeAll, describe, expect, inject, it, vi } from "vitest";
import WebSocket from "ws";
import { AgentService } from "../gen/agent/v1/agent_pb.ts";
import { Health } from "../gen/health/v1/health_pb.ts";
import { TokenService } from "../gen/token/v1/token_pb.ts";
import { type RunningServer, startServer } from "./support/start-server.ts";

interface Sample {
  readonly name: string;
  readonly labels: Record<string, string>;
  readonly value: number;
}

/** Reads the Prometheus text format: one sample per line that is not a comment. */
async function scrape(baseUrl: string): Promise<{ samples: Sample[]; contentType: string | null }> {
  const res = await fetch(`${baseUrl}/metrics`);
  expect(res.status).toBe(200);
  const samples: Sample[] = [];
  for (const line of (await res.text()).split("\n")) {
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (m === null) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g))
      labels[l[1] as string] = l[2] as string;
    samples.push({ name: m[1] as string, labels, value: Number(m[3]) });
  }
  return { samples, contentType: res.headers.get("content-type") };
}

/** The value of the one sample named `name` whose labels include `labels`, or undefined. */
function sampleValue(
  samples: Sample[],
  name: string,
  labels: Record<string, string> = {},
): number | undefined {
  const found = samples.filter(
    (s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v),
  );
  if (found.length > 1) throw new Error(`${found.length} samples of ${name} match ${JSON.stringify(labels)}`);
  return found[0]?.value;
}

const PRICES = "/token.v1.TokenService/GetTokenPrices";
const METADATA = "/token.v1.TokenService/GetTokenMetadata";

describe("metrics on the in-memory store", () => {
  let server: RunningServer;
  beforeAll(async () => {
    server = await startServer();
  });
  afterAll(async () => {
    await server?.close();
  });

  it("counts and times calls by procedure, protocol and code", async () => {
    const connect = createClient(
      TokenService,
      createConnectTransport({ baseUrl: server.baseUrl, httpVersion: "1.1", useBinaryFormat: false }),
    );
    const grpc = createClient(TokenService, createGrpcTransport({ baseUrl: server.baseUrl }));
    const before = (await scrape(server.baseUrl)).samples;
    expect(sampleValue(before, "rpc_requests_total", { procedure: PRICES })).toBeUndefined();

    await connect.getTokenPrices({});
    await connect.getTokenPrices({ symbol: "SOL" });
    await connect.getTokenPrices({ symbol: "USDC" });
    await grpc.getTokenPrices({});
    await connect.getTokenMetadata({ mint: "bad" }).catch(() => {});
    await grpc.getTokenMetadata({ mint: "11111111111111111111111111111111" }).catch(() => {});

    const { samples, contentType } = await scrape(server.baseUrl);
    expect(contentType).toMatch(/^text\/plain; version=0\.0\.4/);
    const count = (procedure: string, protocol: string, code: string) =>
      sampleValue(samples, "rpc_requests_total", { procedure, protocol, code });
    expect(count(PRICES, "connect+json", "ok")).toBe(3);
    expect(count(PRICES, "grpc+proto", "ok")).toBe(1);
    expect(count(METADATA, "connect+json", "invalid_argument")).toBe(1);
    expect(count(METADATA, "grpc+proto", "not_found")).toBe(1);
    expect(count(PRICES, "grpc-web+proto", "ok")).toBeUndefined();

    const labels = { procedure: PRICES, protocol: "connect+json", code: "ok" };
    expect(sampleValue(samples, "rpc_request_duration_seconds_count", labels)).toBe(3);
    expect(sampleValue(samples, "rpc_request_duration_seconds_sum", labels)).toBeGreaterThan(0);
    const buckets = samples.filter(
      (s) =>
        s.name === "rpc_request_duration_seconds_bucket" &&
        s.labels.procedure === PRICES &&
        s.labels.protocol === "connect+json",
    );
    expect(buckets.map((b) => b.labels.le)).toEqual([
      "0.0005",
      "0.001",
      "0.0025",
      "0.005",
      "0.01",
      "0.025",
      "0.05",
      "0.1",
      "0.25",
      "0.5",
      "1",
      "2.5",
      "5",
      "+Inf",
    ]);
    expect(buckets.at(-1)?.value).toBe(3);
    // Cumulative buckets never decrease.
    expect(buckets.map((b) => b.value)).toEqual([...buckets.map((b) => b.value)].sort((a, b) => a - b));
    // Each call is counted in the first bucket whose bound it does not pass: the first bucket that
    // holds all three calls is at least their mean, and the one before it was passed by one of them.
    const sum = sampleValue(samples, "rpc_request_duration_seconds_sum", labels) as number;
    const full = buckets.findIndex((b) => b.value === 3);
    const bound = (i: number) =>
      buckets[i]?.labels.le === "+Inf" ? Infinity : Number(buckets[i]?.labels.le);
    expect(bound(full)).toBeGreaterThanOrEqual(sum / 3);
    if (full > 0) expect(sum).toBeGreaterThan(bound(full - 1));

    // Nothing is left in flight once the calls have answered.
    expect(
      sampleValue(samples, "rpc_requests_in_flight", { procedure: PRICES, protocol: "connect+json" }),
    ).toBe(0);
  });

  it("shows a long-lived stream in flight until it ends", async () => {
    const health = createClient(Health, createGrpcTransport({ baseUrl: server.baseUrl }));
    const abort = new AbortController();
    const stream = health.watch({ service: "" }, { signal: abort.signal })[Symbol.asyncIterator]();
    await stream.next();
    const watching = { procedure: "/grpc.health.v1.Health/Watch", protocol: "grpc+proto" };
    expect(sampleValue((await scrape(server.baseUrl)).samples, "rpc_requests_in_flight", watching)).toBe(1);
    abort.abort();
    await stream.next().catch(() => {});
    const deadline = Date.now() + 10_000;
    let inFlight: number | undefined;
    do {
      inFlight = sampleValue((await scrape(server.baseUrl)).samples, "rpc_requests_in_flight", watching);
      if (inFlight === 0) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    } while (Date.now() < deadline);
    expect(inFlight).toBe(0);
    const ended = sampleValue((await scrape(server.baseUrl)).samples, "rpc_requests_total", {
      ...watching,
      code: "canceled",
    });
    expect(ended).toBe(1);
  });

  it("counts streams open: three at once read 3, and 0 once they have all ended", async () => {
    const tokens = createClient(TokenService, createGrpcTransport({ baseUrl: server.baseUrl }));
    const aborts = [new AbortController(), new AbortController(), new AbortController()];
    const streams = aborts.map((abort) =>
      tokens.watchTokenPrices({ symbols: ["SOL"] }, { signal: abort.signal })[Symbol.asyncIterator](),
    );
    // Each stream has answered, so each is open on the server.
    await Promise.all(streams.map((stream) => stream.next()));
    const open = async () =>
      sampleValue((await scrape(server.baseUrl)).samples, "streams_open", { rpc: "WatchTokenPrices" });
    expect(await open()).toBe(3);
    for (const abort of aborts) abort.abort();
    await Promise.all(streams.map((stream) => stream.next().catch(() => {})));
    await vi.waitFor(async () => expect(await open()).toBe(0), { timeout: 10_000, interval: 50 });
  });

  it("counts what the embedded chain's PubSub port refuses, with the RPC port's refusals", async () => {
    const url = server.localChain?.pubsub?.url as string;
    const before = sampleValue((await scrape(server.baseUrl)).samples, "local_chain_http_rejections_total", {
      reason: "pubsub_host",
    });
    expect(before).toBeUndefined();
    const ws = new WebSocket(url, { headers: { host: "evil.example" } });
    const status = await new Promise<number | undefined>((resolve) => {
      ws.once("unexpected-response", (_req, res) => resolve(res.statusCode));
      ws.once("open", () => resolve(undefined));
    });
    expect(status).toBe(403);
    const after = (await scrape(server.baseUrl)).samples;
    expect(sampleValue(after, "local_chain_http_rejections_total", { reason: "pubsub_host" })).toBe(1);
  });

  it("includes the process's and Node's own metrics", async () => {
    const { samples } = await scrape(server.baseUrl);
    for (const name of [
      "process_cpu_user_seconds_total",
      "process_resident_memory_bytes",
      "nodejs_heap_size_used_bytes",
      "nodejs_eventloop_lag_seconds",
    ]) {
      expect(sampleValue(samples, name), name).toBeGreaterThanOrEqual(0);
    }
    // No MongoDB here, so no pool figures.
    expect(samples.some((s) => s.name.startsWith("mongodb_pool"))).toBe(false);
  });
});

describe("metrics with MongoDB", () => {
  const mongoUri = inject("mongoUri");
  const dbName = `metrics_${process.pid}_${randomBytes(4).toString("hex")}`;
  let server: RunningServer;
  beforeAll(async () => {
    server = await startServer({ env: { MONGODB_URI: mongoUri, MONGODB_DB: dbName } });
  });
  afterAll(async () => {
    await server?.close();
    const client = new MongoClient(mongoUri);
    await client
      .db(dbName)
      .dropDatabase()
      .catch(() => {});
    await client.close();
  });

  it("shows the driver's connection pool, and only this server's calls", async () => {
    const agents = createClient(
      AgentService,
      createConnectTransport({ baseUrl: server.baseUrl, httpVersion: "1.1", useBinaryFormat: false }),
    );
    await agents.listAgents({});
    await agents.listAgents({});
    const { samples } = await scrape(server.baseUrl);
    expect(sampleValue(samples, "mongodb_pool_connections", { state: "open" })).toBeGreaterThanOrEqual(1);
    // Every command the driver sent, by command and collection: each ListAgents reads a page and
    // counts (the driver's countDocuments is an aggregate).
    expect(
      sampleValue(samples, "mongodb_commands_total", { command: "find", collection: "agents" }),
    ).toBeGreaterThanOrEqual(2);
    expect(
      sampleValue(samples, "mongodb_commands_total", { command: "aggregate", collection: "agents" }),
    ).toBeGreaterThanOrEqual(2);
    // Calls have answered: their connections are back in the pool. (The server's own background
    // work, the event repair sweeps, may hold one for a moment: it is let go.)
    await expect
      .poll(async () =>
        sampleValue((await scrape(server.baseUrl)).samples, "mongodb_pool_connections", { state: "in_use" }),
      )
      .toBe(0);
    expect(
      sampleValue(samples, "rpc_requests_total", {
        procedure: "/agent.v1.AgentService/ListAgents",
        protocol: "connect+json",
        code: "ok",
      }),
    ).toBe(2);
    // The other server's calls are not counted here: registries are per server.
    expect(
      sampleValue(samples, "rpc_requests_total", { procedure: PRICES, protocol: "connect+json" }),
    ).toBeUndefined();
  });
});

/**
 * WatchTokenPrices and WatchAgentEvents on a real server, over every protocol: Connect (JSON over
 * HTTP/1.1, binary over h2c), gRPC, gRPC-Web (connect-node transports), gRPC again through
 * grpc-js, and REST as Server-Sent Events. Then the limits: heartbeats, the per-caller cap,
 * deadlines, a reader that falls behind, shutdown, and nothing held after 1,000 streams.
 */
import * as http2 from "node:http2";
import { fileURLToPath } from "node:url";
import { Code, ConnectError, createClient, type Transport } from "@connectrpc/connect";
import {
  createConnectTransport,
  createGrpcTransport,
  createGrpcWebTransport,
} from "@connectrpc/connect-node";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AgentService } from "../gen/agent/v1/agent_pb.ts";
import { TokenService } from "../gen/token/v1/token_pb.ts";
import type { NewEvent } from "../src/events/event-log.ts";
import { catalogToken } from "./support/catalog-prices.ts";
import { useCleanups } from "./support/cleanups.ts";
import { type RunningServer, startServer } from "./support/start-server.ts";

const cleanup = useCleanups();
const SOL = catalogToken("SOL").mint;
const USDC = catalogToken("USDC").mint;

/** Prices that move every 40 ms, watched every 20 ms, and a heartbeat every 300 ms. */
const SETTINGS = { CATALOG_PRICE_TICK_MS: "40", PRICE_WATCH_INTERVAL_MS: "20", STREAM_HEARTBEAT_MS: "300" };

async function serve(env: Record<string, string> = {}): Promise<RunningServer> {
  const server = await startServer({ env: { ...SETTINGS, ...env } });
  cleanup(() => server.close());
  return server;
}

/** Each protocol, with the server settings it runs under (gRPC twice: the lean path, and connect-node's). */
const transports: [string, (baseUrl: string) => Transport, Record<string, string>?][] = [
  ["connect+json (HTTP/1.1)", (baseUrl) => createConnectTransport({ baseUrl, httpVersion: "1.1" })],
  [
    "connect+proto (h2c)",
    (baseUrl) => createConnectTransport({ baseUrl, httpVersion: "2", useBinaryFormat: true }),
  ],
  ["grpc (h2c)", (baseUrl) => createGrpcTransport({ baseUrl })],
  [
    "grpc (h2c) on connect-node (LEAN_UNARY=false)",
    (baseUrl) => createGrpcTransport({ baseUrl }),
    { LEAN_UNARY: "false" },
  ],
  ["grpc-web (HTTP/1.1)", (baseUrl) => createGrpcWebTransport({ baseUrl, httpVersion: "1.1" })],
];

const agentEvent = (owner: string, n: number): NewEvent => ({
  type: n % 2 === 0 ? "run.started" : "run.succeeded",
  owner,
  agentId: `agent-${n % 2}`,
  at: new Date(Date.UTC(2026, 10, 1, 0, 0, n)),
  key: `test-${owner}-${n}`,
  data: { run: { runId: `run-${n}`, attempt: 1, scheduledAt: "2026-11-01T00:00:00.000Z" } },
});

describe.each(transports)("streams over %s", (_name, transportOf, env = {}) => {
  // The prices and the events tests share a server: the first appends nothing to the event log,
  // whose cursors the second counts from the start.
  let shared: RunningServer | undefined;
  beforeAll(async () => {
    shared = await startServer({ env: { ...SETTINGS, ...env } });
  });
  afterAll(async () => {
    await shared?.close();
  });

  it("WatchTokenPrices: every current price first, then the ones that change, each with asOf", async () => {
    const server = shared as RunningServer;
    const client = createClient(TokenService, transportOf(server.baseUrl));
    const abort = new AbortController();
    cleanup(async () => abort.abort());
    const messages = [];
    for await (const message of client.watchTokenPrices({ mints: [SOL, USDC] }, { signal: abort.signal })) {
      messages.push(message);
      if (messages.filter((m) => !m.heartbeat).length >= 3) break;
    }
    const [first, ...later] = messages.filter((m) => !m.heartbeat);
    expect(first?.success).toBe(true);
    expect(first?.data.map((p) => p.mint).sort()).toEqual([SOL, USDC].sort());
    // Both are the catalog's tokens, priced: a mint the source does not know would be unpriced.
    expect(first?.data.map((p) => [p.symbol, p.unpriced]).sort()).toEqual([
      ["SOL", false],
      ["USDC", false],
    ]);
    for (const message of later) {
      expect(message.data.length).toBeGreaterThan(0);
      for (const price of message.data) {
        expect([SOL, USDC]).toContain(price.mint);
        expect(price.price).toBeGreaterThan(0);
      }
    }
    // The walk moves prices, and asOf says when each was obtained.
    const sol = messages.flatMap((m) => m.data).filter((p) => p.mint === SOL);
    const times = sol.map((p) => Number(p.asOf?.seconds) * 1000 + (p.asOf?.nanos ?? 0) / 1e6);
    expect(times).toEqual([...times].sort((a, b) => a - b));
  });

  it("WatchAgentEvents: replays after a cursor, then live, only the caller's", async () => {
    const server = shared as RunningServer;
    const log = server.context.events;
    for (let n = 0; n < 5; n++) await log.append(agentEvent("anonymous", n));
    await log.append(agentEvent("someone-else", 99));
    const client = createClient(AgentService, transportOf(server.baseUrl));
    const abort = new AbortController();
    cleanup(async () => abort.abort());
    const seen: { cursor: string; type: string; runId: string | undefined }[] = [];
    const stream = client.watchAgentEvents({ after: "2" }, { signal: abort.signal });
    let appended = false;
    for await (const message of stream) {
      if (message.heartbeat || message.data === undefined) continue;
      seen.push({ cursor: message.data.cursor, type: message.data.type, runId: message.data.run?.runId });
      if (!appended && seen.length === 3) {
        appended = true;
        for (let n = 5; n < 8; n++) await log.append(agentEvent("anonymous", n));
      }
      if (seen.length === 6) break;
    }
    expect(seen.map((e) => e.runId)).toEqual(["run-2", "run-3", "run-4", "run-5", "run-6", "run-7"]);
    expect(seen.map((e) => Number(e.cursor))).toEqual([3, 4, 5, 7, 8, 9]);
  });

  it("sends heartbeats while nothing changes", async () => {
    const server = await serve({ ...env, CATALOG_PRICE_TICK_MS: "0" });
    const client = createClient(TokenService, transportOf(server.baseUrl));
    const abort = new AbortController();
    cleanup(async () => abort.abort());
    const kinds: string[] = [];
    for await (const message of client.watchTokenPrices({ mints: [SOL] }, { signal: abort.signal })) {
      kinds.push(message.heartbeat ? "heartbeat" : `prices:${message.data.length}`);
      if (kinds.length === 3) break;
    }
    expect(kinds).toEqual(["prices:1", "heartbeat", "heartbeat"]);
  });
});

describe("streams: errors and limits", () => {
  const connect = (server: RunningServer) =>
    createConnectTransport({ baseUrl: server.baseUrl, httpVersion: "2" });

  async function firstError(messages: AsyncIterable<unknown>): Promise<ConnectError> {
    try {
      for await (const _ of messages) {
        /* drain */
      }
    } catch (error) {
      return ConnectError.from(error);
    }
    throw new Error("the stream ended without an error");
  }

  it("refuses bad requests with invalid_argument naming the field, and unknown agents with not_found", async () => {
    const server = await serve();
    const tokens = createClient(TokenService, connect(server));
    const agents = createClient(AgentService, connect(server));
    const none = await firstError(tokens.watchTokenPrices({}));
    expect([none.code, none.rawMessage]).toEqual([
      Code.InvalidArgument,
      expect.stringMatching(/^mints or symbols/),
    ]);
    const bad = await firstError(tokens.watchTokenPrices({ mints: [SOL, "nope"] }));
    expect([bad.code, bad.rawMessage]).toEqual([Code.InvalidArgument, expect.stringMatching(/^mints\[1\]/)]);
    const cursor = await firstError(agents.watchAgentEvents({ after: "x1" }));
    expect([cursor.code, cursor.rawMessage]).toEqual([
      Code.InvalidArgument,
      expect.stringMatching(/^after /),
    ]);
    const future = await firstError(agents.watchAgentEvents({ after: "999" }));
    expect(future.code).toBe(Code.OutOfRange);
    const missing = await firstError(agents.watchAgentEvents({ agentId: "no-such-agent" }));
    expect(missing.code).toBe(Code.NotFound);
  });

  it("caps streams per caller with resource_exhausted, and frees the slot when one ends", async () => {
    const server = await serve({ STREAM_MAX_PER_KEY: "2" });
    const tokens = createClient(TokenService, connect(server));
    const aborts = [new AbortController(), new AbortController()];
    cleanup(async () => {
      for (const a of aborts) a.abort();
    });
    const open = aborts.map((a) =>
      tokens.watchTokenPrices({ mints: [SOL] }, { signal: a.signal })[Symbol.asyncIterator](),
    );
    await Promise.all(open.map((it) => it.next()));
    const third = await firstError(tokens.watchTokenPrices({ mints: [SOL] }));
    expect(third.code).toBe(Code.ResourceExhausted);
    aborts[0]?.abort();
    await expect.poll(() => server.streamStats().slots.streams).toBe(1);
    const last = new AbortController();
    aborts.push(last);
    const again = tokens.watchTokenPrices({ mints: [SOL] }, { signal: last.signal })[Symbol.asyncIterator]();
    expect((await again.next()).done).toBe(false);
  });

  it("ends a stream at its deadline with deadline_exceeded", async () => {
    const server = await serve({ CATALOG_PRICE_TICK_MS: "0" });
    const tokens = createClient(TokenService, connect(server));
    const error = await firstError(tokens.watchTokenPrices({ mints: [SOL] }, { timeoutMs: 400 }));
    expect(error.code).toBe(Code.DeadlineExceeded);
  });

  it("ends streams with unavailable at shutdown, well within SHUTDOWN_TIMEOUT_MS", async () => {
    const server = await startServer({ env: { SHUTDOWN_TIMEOUT_MS: "5000" } });
    // One over the Connect protocol (connect-node), one over gRPC (the lean stream path).
    const tokens = createClient(TokenService, connect(server));
    const agents = createClient(AgentService, createGrpcTransport({ baseUrl: server.baseUrl }));
    const ends = [
      firstError(tokens.watchTokenPrices({ mints: [SOL] })),
      firstError(agents.watchAgentEvents({})),
    ];
    await expect.poll(() => server.streamStats().slots.streams).toBe(2);
    const started = performance.now();
    await server.close();
    const errors = await Promise.all(ends);
    expect(errors.map((e) => e.code)).toEqual([Code.Unavailable, Code.Unavailable]);
    expect(performance.now() - started).toBeLessThan(4_000);
  });

  it("ends a reader that falls behind with resource_exhausted and the cursor to resume after", async () => {
    const server = await serve({ STREAM_BUFFER_MESSAGES: "4" });
    const log = server.context.events;
    await log.append(agentEvent("anonymous", 0));
    // A raw HTTP/2 gRPC call whose reader stops reading: flow control stops the server's writes.
    const session = http2.connect(server.baseUrl);
    cleanup(async () => void session.close());
    const body = Buffer.alloc(5); // an empty WatchAgentEventsRequest: "from now on"
    const stream = session.request({
      ":method": "POST",
      ":path": "/agent.v1.AgentService/WatchAgentEvents",
      "content-type": "application/grpc",
      te: "trailers",
    });
    const trailers = new Promise<http2.IncomingHttpHeaders>((resolve) => stream.once("trailers", resolve));
    stream.end(body);
    stream.pause();
    await expect.poll(() => server.streamStats().events.live).toBe(1);
    for (let n = 1; n <= 2_000; n++) await log.append(agentEvent("anonymous", n));
    await expect.poll(() => server.streamStats().events.watches, { timeout: 10_000 }).toBe(0);
    stream.resume();
    const ended = await trailers;
    expect(ended["grpc-status"]).toBe(String(Code.ResourceExhausted));
    const resumeAfter = ended["x-resume-after"];
    expect(decodeURIComponent(String(ended["grpc-message"]))).toContain(`resume with after=${resumeAfter}`);
    expect(Number(resumeAfter)).toBeGreaterThan(1);
  });

  it("holds no slot, watch, subscription or timer after 1,000 streams opened and cancelled", async () => {
    const server = await serve({ STREAM_MAX_PER_KEY: "10000", HTTP2_MAX_CONCURRENT_STREAMS: "1000" });
    // Prices over the Connect protocol (connect-node), events over gRPC (the lean stream path).
    const tokens = createClient(TokenService, connect(server));
    const agents = createClient(AgentService, createGrpcTransport({ baseUrl: server.baseUrl }));
    await server.context.events.append(agentEvent("anonymous", 0));
    for (let round = 0; round < 10; round++) {
      await Promise.all(
        Array.from({ length: 100 }, async (_, i) => {
          const abort = new AbortController();
          const messages =
            i % 2 === 0
              ? tokens.watchTokenPrices({ mints: [i % 4 === 0 ? SOL : USDC] }, { signal: abort.signal })
              : agents.watchAgentEvents({ after: "0" }, { signal: abort.signal });
          const it = messages[Symbol.asyncIterator]();
          await it.next();
          abort.abort();
          await it.next().catch(() => {});
        }),
      );
    }
    await expect
      .poll(() => server.streamStats(), { timeout: 5_000 })
      .toEqual({
        slots: { streams: 0, keys: 0 },
        events: { watches: 0, live: 0, timer: false },
        prices: { subscriptions: 0, mints: 0, timer: false },
        revocations: { keys: 0, holds: 0, timer: false },
      });
  });
});

describe("streams under API keys", () => {
  it("need a key with the scope, show each owner only its own agents' events, and cap per key", async () => {
    const admin = `admin-${"k".repeat(40)}`;
    const server = await serve({ AUTH_MODE: "apikey", ADMIN_API_KEY: admin, STREAM_MAX_PER_KEY: "1" });
    const keyOf = async (owner: string, scopes: string[]) =>
      (await server.context.apiKeys.create({ owner, scopes })).key;
    const alice = await keyOf("alice", ["tokens:read", "agents:read"]);
    const bob = await keyOf("bob", ["agents:read"]);
    const transport = createConnectTransport({ baseUrl: server.baseUrl, httpVersion: "2" });
    const agents = createClient(AgentService, transport);
    const tokens = createClient(TokenService, transport);
    /** The code a stream ends with before its first message, or "ok" once one came (then it is cancelled). */
    const errorOf = async (open: (signal: AbortSignal) => AsyncIterable<unknown>) => {
      const abort = new AbortController();
      try {
        for await (const _ of open(abort.signal)) break;
      } catch (error) {
        return ConnectError.from(error).code;
      } finally {
        abort.abort();
      }
      return "ok";
    };
    expect(await errorOf((signal) => agents.watchAgentEvents({}, { signal }))).toBe(Code.Unauthenticated);
    expect(
      await errorOf((signal) =>
        tokens.watchTokenPrices({ mints: [SOL] }, { headers: { authorization: `Bearer ${bob}` }, signal }),
      ),
    ).toBe(Code.PermissionDenied);
    await server.context.events.append(agentEvent("alice", 1));
    await server.context.events.append(agentEvent("bob", 2));
    const firstEvent = async (key: string) => {
      const abort = new AbortController();
      for await (const m of agents.watchAgentEvents(
        { after: "0" },
        { headers: { authorization: `Bearer ${key}` }, signal: abort.signal },
      )) {
        if (m.data === undefined) continue;
        abort.abort();
        return m.data.run?.runId;
      }
    };
    expect(await firstEvent(alice)).toBe("run-1");
    expect(await firstEvent(bob)).toBe("run-2");
    // One stream per key here: alice's second is refused, bob's first is not.
    const abort = new AbortController();
    cleanup(async () => abort.abort());
    const held = agents
      .watchAgentEvents({}, { headers: { authorization: `Bearer ${alice}` }, signal: abort.signal })
      [Symbol.asyncIterator]();
    await held.next();
    const as = (key: string) => (signal: AbortSignal) =>
      agents.watchAgentEvents({}, { headers: { authorization: `Bearer ${key}` }, signal });
    expect(await errorOf(as(alice))).toBe(Code.ResourceExhausted);
    expect(await errorOf(as(bob))).toBe("ok");
  });
});

describe("streams over REST as Server-Sent Events", () => {
  /** Reads events from an SSE response until `enough` says so; comments are kept as ":" lines. */
  async function readEvents(
    response: Response,
    enough: (events: { id?: string; event?: string; data?: string; comment?: string }[]) => boolean,
  ) {
    const events: { id?: string; event?: string; data?: string; comment?: string }[] = [];
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    while (!enough(events)) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      for (let end = buffer.indexOf("\n\n"); end >= 0; end = buffer.indexOf("\n\n")) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const event: { id?: string; event?: string; data?: string; comment?: string } = {};
        for (const line of block.split("\n")) {
          if (line.startsWith(":")) event.comment = line.slice(1).trim();
          else {
            const at = line.indexOf(": ");
            (event as Record<string, string>)[line.slice(0, at)] = line.slice(at + 2);
          }
        }
        events.push(event);
      }
    }
    await reader.cancel();
    return events;
  }

  it("streams prices as data events, heartbeats as comments", async () => {
    const server = await serve({ CATALOG_PRICE_TICK_MS: "0" });
    const response = await fetch(`${server.baseUrl}/v1/tokens/prices:watch?mints=${SOL}`);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toMatch(/^text\/event-stream/);
    const events = await readEvents(response, (e) => e.filter((x) => x.comment === "heartbeat").length >= 1);
    const data = events.filter((e) => e.data !== undefined).map((e) => JSON.parse(e.data as string));
    expect(data[0]).toMatchObject({ success: true, heartbeat: false, data: [{ mint: SOL, symbol: "SOL" }] });
    expect(events.some((e) => e.comment === "heartbeat")).toBe(true);
    // Price messages have no type: plain "message" events, for onmessage.
    expect(events.filter((e) => e.data !== undefined).every((e) => e.event === undefined)).toBe(true);
  });

  it("gives each agent event its cursor as id, and resumes after Last-Event-ID", async () => {
    const server = await serve();
    for (let n = 0; n < 4; n++) await server.context.events.append(agentEvent("anonymous", n));
    const response = await fetch(`${server.baseUrl}/v1/agents/events:watch`, {
      headers: { "last-event-id": "2" },
    });
    expect(response.status).toBe(200);
    const events = await readEvents(response, (e) => e.filter((x) => x.id !== undefined).length >= 2);
    const withIds = events.filter((e) => e.id !== undefined);
    expect(withIds.map((e) => e.id)).toEqual(["3", "4"]);
    // Named by its type, for EventSource.addEventListener("run.started", ...).
    expect(withIds.map((e) => e.event)).toEqual(["run.started", "run.succeeded"]);
    expect(JSON.parse(withIds[0]?.data as string)).toMatchObject({
      success: true,
      data: { cursor: "3", type: "run.started", agentId: "agent-0", run: { runId: "run-2" } },
    });
  });

  it("answers a refused stream as a REST error with its HTTP status", async () => {
    const server = await serve();
    const bad = await fetch(`${server.baseUrl}/v1/agents/events:watch?after=x`);
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({
      code: "invalid_argument",
      message: expect.stringMatching(/^after /),
    });
    const missing = await fetch(`${server.baseUrl}/v1/agents/no-such-agent/events:watch`);
    expect(missing.status).toBe(404);
    const none = await fetch(`${server.baseUrl}/v1/tokens/prices:watch`);
    expect(none.status).toBe(400);
  });
});

describe("streams over grpc-js (an independent gRPC client)", () => {
  it("WatchTokenPrices and WatchAgentEvents", async () => {
    const server = await serve();
    const definition = protoLoader.loadSync(["token/v1/token.proto", "agent/v1/agent.proto"], {
      includeDirs: [
        fileURLToPath(new URL("../proto", import.meta.url)),
        fileURLToPath(new URL("../node_modules/google-proto-files", import.meta.url)),
      ],
      defaults: true,
    });
    const loaded = grpc.loadPackageDefinition(definition) as unknown as {
      token: { v1: { TokenService: typeof grpc.Client } };
      agent: { v1: { AgentService: typeof grpc.Client } };
    };
    const target = new URL(server.baseUrl).host;
    const tokens = new loaded.token.v1.TokenService(target, grpc.credentials.createInsecure()) as unknown as {
      watchTokenPrices(
        req: unknown,
      ): grpc.ClientReadableStream<{ data: { mint: string }[]; heartbeat: boolean }>;
      close(): void;
    };
    const agents = new loaded.agent.v1.AgentService(target, grpc.credentials.createInsecure()) as unknown as {
      watchAgentEvents(
        req: unknown,
      ): grpc.ClientReadableStream<{ data?: { cursor: string; type: string }; heartbeat: boolean }>;
      close(): void;
    };
    cleanup(async () => {
      tokens.close();
      agents.close();
    });
    const prices = tokens.watchTokenPrices({ mints: [SOL] });
    const [first] = (await onceData(prices)) as [{ data: { mint: string }[] }];
    expect(first.data.map((p) => p.mint)).toEqual([SOL]);
    prices.cancel();
    await server.context.events.append(agentEvent("anonymous", 1));
    const events = agents.watchAgentEvents({ after: "0" });
    // The stream opens with a heartbeat, then the event.
    const [opening] = (await onceData(events)) as [{ heartbeat: boolean }];
    expect(opening.heartbeat).toBe(true);
    const [event] = (await onceData(events)) as [{ data: { cursor: string; type: string } }];
    expect(event.data).toMatchObject({ cursor: "1", type: "run.succeeded" });
    events.cancel();
  });
});

function onceData(stream: NodeJS.EventEmitter): Promise<unknown[]> {
  return new Promise((resolve, reject) => {
    stream.once("data", (data) => resolve([data]));
    stream.once("error", reject);
  });
}

/**
 * A stream's slot, watch and queue come back however its reader ends: a REST (Server-Sent Events)
 * client that drops while its replay still fills the connection's buffers, and readers that stay
 * connected but stop reading (REST, and gRPC on the lean stream path), which are ended after
 * STREAM_WRITE_TIMEOUT_MS. On the memory store and on MongoDB (FerretDB).
 */
import { randomBytes } from "node:crypto";
import * as http2 from "node:http2";
import * as net from "node:net";
import { describe, expect, inject, it } from "vitest";
import type { NewEvent } from "../src/events/event-log.ts";
import { useCleanups } from "./support/cleanups.ts";
import { type RunningServer, startServer } from "./support/start-server.ts";

/**
 * How long a release may take: the replay must first fill the socket's buffers from the store,
 * which on a busy two-core machine with FerretDB takes seconds; a leak never comes back at all.
 */
const RELEASE_WITHIN_MS = 45_000;
const cleanup = useCleanups();

const STORES: [string, () => Record<string, string>][] = [
  ["memory", () => ({})],
  [
    "mongo",
    () => ({
      MONGODB_URI: inject("mongoUri"),
      MONGODB_DB: `stream_release_${randomBytes(3).toString("hex")}`,
    }),
  ],
];

/**
 * Events enough that their replay cannot fit in the buffers between the server and a client that
 * reads nothing: Node's, and the kernel's on both sides of a loopback connection, about 4 MB here
 * (a socket's send buffer grows up to net.ipv4.tcp_wmem's 4 MB). Each event carries a run error of
 * 2,000 characters: some 14 MB in all.
 */
const REPLAYED_EVENTS = 1_500;
const FILLER = "x".repeat(10_000);

async function serve(env: Record<string, string>): Promise<RunningServer> {
  const server = await startServer({ env });
  cleanup(async () => {
    if (env.MONGODB_URI !== undefined) {
      await server.context.mongoClient?.db(server.context.config.mongo?.dbName).dropDatabase();
    }
    await server.close();
  });
  return server;
}

const agentEvent = (n: number): NewEvent => ({
  type: "run.succeeded",
  owner: "anonymous",
  agentId: `agent-${n % 10}`,
  at: new Date(Date.UTC(2026, 10, 1, 0, 0, 0, n)),
  key: `release-${n}`,
  data: { run: { runId: `run-${n}`, attempt: 1, scheduledAt: "2026-11-01T00:00:00.000Z", error: FILLER } },
});

/** Appends `count` events, many at once (the MongoDB log batches concurrent appends). */
async function appendEvents(server: RunningServer, count: number): Promise<void> {
  for (let start = 0; start < count; start += 1_000) {
    await Promise.all(
      Array.from({ length: Math.min(1_000, count - start) }, (_, i) =>
        server.context.events.append(agentEvent(start + i)),
      ),
    );
  }
}

/**
 * An HTTP/1.1 GET whose client reads the response's first bytes (its status line) and then
 * nothing more: the server's writes fill the connection's buffers and stop.
 */
async function openUnread(
  server: RunningServer,
  request: string | Buffer,
): Promise<{ socket: net.Socket; head: string }> {
  const socket = net.connect(server.port, "127.0.0.1");
  cleanup(async () => void socket.destroy());
  await new Promise<void>((resolve, reject) => {
    socket.once("connect", resolve);
    socket.once("error", reject);
  });
  socket.write(request);
  const head = await new Promise<string>((resolve, reject) => {
    socket.once("data", (chunk: Buffer) => {
      socket.pause();
      resolve(chunk.toString("latin1").split("\r\n")[0] ?? "");
    });
    socket.once("error", reject);
  });
  return { socket, head };
}

/** A REST event stream's request. */
const sseRequest = (path: string) =>
  `GET ${path} HTTP/1.1\r\nhost: 127.0.0.1\r\naccept: text/event-stream\r\n\r\n`;

/** A server-streaming call over the Connect protocol (JSON on HTTP/1.1), served by connect-node. */
function connectStreamRequest(path: string, message: unknown): Buffer {
  const json = Buffer.from(JSON.stringify(message));
  const envelope = Buffer.concat([Buffer.from([0, 0, 0, 0, 0]), json]);
  envelope.writeUInt32BE(json.length, 1);
  const head =
    `POST ${path} HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/connect+json\r\n` +
    `connect-protocol-version: 1\r\ncontent-length: ${envelope.length}\r\n\r\n`;
  return Buffer.concat([Buffer.from(head), envelope]);
}

/** The value of the `streams_open` gauge for WatchAgentEvents, as /metrics shows it. */
async function streamsOpenGauge(server: RunningServer): Promise<number> {
  const text = await (await fetch(`${server.baseUrl}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith('streams_open{rpc="WatchAgentEvents"}'));
  return Number(line?.split(" ")[1]);
}

const nothingHeld = {
  slots: { streams: 0, keys: 0 },
  events: { watches: 0, live: 0, timer: false },
  prices: { subscriptions: 0, mints: 0, timer: false },
  revocations: { keys: 0, holds: 0, timer: false },
};

describe.each(STORES)("stream slots on the %s store", (_name, storeEnv) => {
  it("come back from REST event streams whose clients drop mid-replay, so the next streams open", {
    timeout: 3 * RELEASE_WITHIN_MS,
  }, async () => {
    const cap = 2;
    const server = await serve({ ...storeEnv(), STREAM_MAX_PER_KEY: String(cap) });
    await appendEvents(server, REPLAYED_EVENTS);
    // More drops than the caller may hold streams: each must give its slot back.
    for (let i = 0; i <= cap; i++) {
      let opened = await openUnread(server, sseRequest("/v1/agents/events:watch?after=0"));
      // A 503 is the event log's read past its bound on a loaded FerretDB: its slot is given back
      // (checked below as for every stream), and it is opened again, as an EventSource reconnects.
      for (let attempt = 1; opened.head === "HTTP/1.1 503 Service Unavailable" && attempt < 5; attempt++) {
        opened.socket.destroy();
        await expect
          .poll(() => server.streamStats().slots, { timeout: RELEASE_WITHIN_MS })
          .toEqual({ streams: 0, keys: 0 });
        opened = await openUnread(server, sseRequest("/v1/agents/events:watch?after=0"));
      }
      const { socket, head } = opened;
      expect(head, `stream ${i + 1}`).toBe("HTTP/1.1 200 OK");
      // Still replaying: the unread client holds the replay up, as it would a server without
      // a way out of its wait for "drain".
      expect(server.streamStats().events).toMatchObject({ watches: 1, live: 0 });
      socket.destroy();
      await expect
        .poll(() => server.streamStats().slots, { timeout: RELEASE_WITHIN_MS })
        .toEqual({ streams: 0, keys: 0 });
    }
    await expect.poll(() => server.streamStats(), { timeout: RELEASE_WITHIN_MS }).toEqual(nothingHeld);
    expect(await streamsOpenGauge(server)).toBe(0);

    // Streams that read, after all that: as many as the caller may hold open at once, each
    // replaying from the start, counted as open while they are.
    const abort = new AbortController();
    await Promise.all(
      Array.from({ length: cap }, async () => {
        // A 503 is the event log's read past its bound on a loaded FerretDB: opened again, as an
        // EventSource reconnects. A slot not given back would be a 429, which is not retried.
        let response: Response;
        for (let attempt = 1; ; attempt++) {
          response = await fetch(`${server.baseUrl}/v1/agents/events:watch?after=0`, {
            signal: abort.signal,
          });
          if (response.status !== 503 || attempt === 5) break;
          await response.body?.cancel();
        }
        expect(response.status).toBe(200);
        const reader = (response.body as ReadableStream<Uint8Array>).getReader();
        // Until the first event; a stream that ends first fails here. (Reading on after the end
        // answers at once, forever: a loop that did not look at `done` starved every timer of
        // the worker, this test's timeout among them, and held the run for good.)
        const decoder = new TextDecoder();
        let text = "";
        while (!text.includes("\nid: 1\n")) {
          const { done, value } = await reader.read();
          if (done) throw new Error(`the event stream ended before its first event: ${text.slice(0, 500)}`);
          text += decoder.decode(value, { stream: true });
        }
      }),
    );
    expect(await streamsOpenGauge(server)).toBe(cap);
    abort.abort();
    await expect.poll(() => server.streamStats(), { timeout: RELEASE_WITHIN_MS }).toEqual(nothingHeld);
    expect(await streamsOpenGauge(server)).toBe(0);
  });

  it("come back from a REST reader that stays connected but stops reading (STREAM_WRITE_TIMEOUT_MS)", {
    timeout: 2 * RELEASE_WITHIN_MS,
  }, async () => {
    const server = await serve({ ...storeEnv(), STREAM_WRITE_TIMEOUT_MS: "500" });
    await appendEvents(server, REPLAYED_EVENTS);
    const { socket, head } = await openUnread(server, sseRequest("/v1/agents/events:watch?after=0"));
    expect(head).toBe("HTTP/1.1 200 OK");
    // The server ends it (the client never closes its side, nor reads), and lets go of all it held.
    await expect.poll(() => server.streamStats(), { timeout: RELEASE_WITHIN_MS }).toEqual(nothingHeld);
    expect(await streamsOpenGauge(server)).toBe(0);
    // The connection is gone too: a client that reads again finds it closed.
    const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
    socket.on("error", () => {});
    socket.resume();
    await closed;
  });

  it("come back from a Connect-protocol reader (connect-node) that stays connected but stops reading", {
    timeout: 2 * RELEASE_WITHIN_MS,
  }, async () => {
    const server = await serve({ ...storeEnv(), STREAM_WRITE_TIMEOUT_MS: "500" });
    await appendEvents(server, REPLAYED_EVENTS);
    const { socket, head } = await openUnread(
      server,
      connectStreamRequest("/agent.v1.AgentService/WatchAgentEvents", { after: "0" }),
    );
    expect(head).toBe("HTTP/1.1 200 OK");
    await expect.poll(() => server.streamStats(), { timeout: RELEASE_WITHIN_MS }).toEqual(nothingHeld);
    expect(await streamsOpenGauge(server)).toBe(0);
    const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
    socket.on("error", () => {});
    socket.resume();
    await closed;
  });

  it("come back from a gRPC reader that stops reading, reset with ENHANCE_YOUR_CALM (resource_exhausted)", {
    timeout: 2 * RELEASE_WITHIN_MS,
  }, async () => {
    const server = await serve({ ...storeEnv(), STREAM_WRITE_TIMEOUT_MS: "500" });
    await appendEvents(server, REPLAYED_EVENTS);
    const session = http2.connect(server.baseUrl);
    cleanup(async () => void session.destroy());
    // WatchAgentEvents {after: "0"}: field 2, a string of one byte.
    const message = Buffer.from([0x12, 0x01, 0x30]);
    const frame = Buffer.concat([Buffer.from([0, 0, 0, 0, message.length]), message]);
    const unread = async () => {
      const stream = session.request({
        ":method": "POST",
        ":path": "/agent.v1.AgentService/WatchAgentEvents",
        "content-type": "application/grpc",
        te: "trailers",
      });
      stream.on("error", () => {});
      // The status of a stream that ends rather than being reset (trailers are HEADERS frames,
      // which flow control does not hold back).
      let status: string | undefined;
      stream.once("response", (headers) => {
        status ??= headers["grpc-status"] as string | undefined;
      });
      stream.once("trailers", (trailers) => {
        status ??= trailers["grpc-status"] as string | undefined;
      });
      // HTTP/2 flow control: a stream that is not read sends no WINDOW_UPDATE, and the server's
      // writes stop once the window is spent.
      stream.pause();
      stream.end(frame);
      await new Promise((resolve) => stream.once("response", resolve));
      await expect.poll(() => stream.closed, { timeout: RELEASE_WITHIN_MS }).toBe(true);
      return { stream, status: () => status };
    };
    let { stream, status } = await unread();
    // Unavailable (14) is the event log's read past its bound on a loaded FerretDB, before the
    // reader could fall behind: called again, as a client would.
    for (let attempt = 1; status() === "14" && attempt < 5; attempt++) ({ stream, status } = await unread());
    expect(stream.rstCode, `grpc-status ${status()}`).toBe(http2.constants.NGHTTP2_ENHANCE_YOUR_CALM);
    await expect.poll(() => server.streamStats(), { timeout: RELEASE_WITHIN_MS }).toEqual(nothingHeld);
    expect(await streamsOpenGauge(server)).toBe(0);
  });
});

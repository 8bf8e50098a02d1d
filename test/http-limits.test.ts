/**
 * What one client can hold of the server is bounded, and what it abandons is released: connections
 * abandoned mid-request are freed (no leak), connections beyond MAX_CONNECTIONS are closed on
 * arrival, HTTP/2 advertises and keeps a stream limit, slow headers and slow bodies are cut off on
 * both HTTP versions, an oversized gRPC upload is reset once answered, and every refusal is counted.
 */
import * as http from "node:http";
import * as http2 from "node:http2";
import * as net from "node:net";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { describe, expect, it } from "vitest";
import type { AgentStore } from "../src/agent/agent-store.ts";
import { createMemoryAgentStore } from "../src/agent/memory-agent-store.ts";
import { useCleanups } from "./support/cleanups.ts";
import { startServer } from "./support/start-server.ts";

const defer = useCleanups();
const PRICES = "/token.v1.TokenService/GetTokenPrices";

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function start(env: Record<string, string> = {}, agentStore?: AgentStore) {
  const server = await startServer({
    env,
    ...(agentStore === undefined ? {} : { overrides: { agentStore } }),
  });
  defer(() => server.close());
  return server;
}

/** The value of one series of /metrics, or 0 when it has not been counted yet. */
async function counter(baseUrl: string, series: string): Promise<number> {
  const text = await (await fetch(`${baseUrl}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith(`${series} `));
  return line === undefined ? 0 : Number(line.split(" ")[1]);
}

/** Resolves once `socket` is closed by the other end; rejects after `ms`. */
function closedWithin(socket: net.Socket, ms: number): Promise<string> {
  return new Promise((resolve, reject) => {
    let received = "";
    socket.on("data", (d) => {
      received += d.toString("latin1");
    });
    socket.on("error", () => {});
    const timer = setTimeout(() => reject(new Error(`still open after ${ms} ms`)), ms);
    socket.once("close", () => {
      clearTimeout(timer);
      resolve(received);
    });
  });
}

function connectTo(port: number): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, "127.0.0.1", () => resolve(socket));
    socket.once("error", reject);
  });
}

/** Waits until `check` holds, polling; fails after `ms`. */
async function eventually(check: () => Promise<boolean> | boolean, ms: number, what: string) {
  const until = performance.now() + ms;
  while (!(await check())) {
    if (performance.now() > until) throw new Error(`not within ${ms} ms: ${what}`);
    await sleep(20);
  }
}

describe("connections abandoned mid-request are released", () => {
  const ABANDONED = 300;

  /**
   * Counts the server-side sockets still reachable after full garbage collections, giving the
   * server up to a few seconds (a loaded machine) to finish closing them; a leak keeps them all.
   */
  async function liveAfterGc(refs: WeakRef<net.Socket>[]): Promise<number> {
    let live = refs.length;
    for (let i = 0; i < 40 && live >= refs.length / 10; i++) {
      await sleep(100);
      gc();
      live = refs.filter((r) => r.deref() !== undefined).length;
    }
    return live;
  }

  async function abandonMany(port: number, send: (socket: net.Socket) => Promise<void>): Promise<void> {
    for (let i = 0; i < ABANDONED; i += 20) {
      await Promise.all(
        Array.from({ length: 20 }, async () => {
          const socket = await connectTo(port);
          const closed = new Promise((resolve) => socket.once("close", resolve));
          socket.on("error", () => {});
          await send(socket);
          socket.destroy();
          await closed;
        }),
      );
    }
  }

  const cases: [string, (socket: net.Socket) => Promise<void>][] = [
    [
      "a body cut short",
      async (socket) => {
        socket.write(
          `POST ${PRICES} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{`,
        );
        await sleep(5);
      },
    ],
    [
      "garbage pipelined after a valid request",
      async (socket) => {
        const answered = new Promise((resolve) => socket.once("data", resolve));
        socket.write(
          `POST ${PRICES} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}\u0000\u0001garbage\r\n\r\n`,
        );
        await answered;
      },
    ],
    [
      "a slow call aborted by its client",
      async (socket) => {
        const body = JSON.stringify({ agentId: "x".repeat(22) });
        socket.write(
          `POST /agent.v1.AgentService/GetAgent HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body}`,
        );
        await sleep(5);
      },
    ],
  ];

  it.each(cases)("%s", async (_name, send) => {
    // GetAgent answers after 40 ms, so the third case is aborted while its call is in flight.
    const memory = createMemoryAgentStore();
    const slow: AgentStore = {
      ...memory,
      get: async (owner, id) => {
        await sleep(40);
        return memory.get(owner, id);
      },
    };
    const server = await start({}, slow);
    const refs: WeakRef<net.Socket>[] = [];
    server.listener.on("connection", (socket: net.Socket) => refs.push(new WeakRef(socket)));
    await abandonMany(server.port, send);
    await sleep(100); // slow calls finish
    // A client that resets before the server has accepted its connection is never seen at all.
    expect(refs.length).toBeGreaterThan(ABANDONED / 4);
    // A handful may still be referenced from recently used internal structures; a leak keeps all.
    expect(await liveAfterGc(refs)).toBeLessThan(refs.length / 10);
    // And the server still serves.
    const res = await fetch(`${server.baseUrl}${PRICES}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{}",
    });
    expect(res.status).toBe(200);
  });
});

describe("MAX_CONNECTIONS", () => {
  it("closes connections beyond the cap on arrival, counts them, and keeps serving the others", async () => {
    const server = await start({ MAX_CONNECTIONS: "3" });
    const held = await Promise.all([1, 2, 3].map(() => connectTo(server.port)));
    const extra = await connectTo(server.port);
    expect(await closedWithin(extra, 5_000)).toBe("");
    // The connections within the cap still work.
    const agent = new http.Agent({ keepAlive: false });
    held[0]?.destroy();
    await sleep(50);
    const body = await new Promise<string>((resolve, reject) => {
      http
        .get(`${server.baseUrl}/healthz`, { agent }, (res) => {
          let text = "";
          res.on("data", (d) => {
            text += d;
          });
          res.on("end", () => resolve(text));
        })
        .on("error", reject);
    });
    expect(JSON.parse(body)).toEqual({ status: "ok" });
    for (const socket of held) socket.destroy();
    await sleep(50);
    expect(await counter(server.baseUrl, 'http_rejections_total{reason="connection_limit"}')).toBe(1);
  });
});

describe("HTTP/2 streams per connection", () => {
  it("advertises HTTP2_MAX_CONCURRENT_STREAMS and holds further streams back until one ends", async () => {
    const server = await start({ HTTP2_MAX_CONCURRENT_STREAMS: "4" });
    const client = http2.connect(server.baseUrl);
    defer(async () => {
      client.destroy();
    });
    await new Promise<void>((resolve) => client.once("remoteSettings", () => resolve()));
    expect(client.remoteSettings.maxConcurrentStreams).toBe(4);
    // Four calls whose bodies never end hold every slot.
    const held = [1, 2, 3, 4].map(() => {
      const stream = client.request({
        ":method": "POST",
        ":path": PRICES,
        "content-type": "application/json",
      });
      stream.on("error", () => {});
      stream.write("{");
      return stream;
    });
    let answered = false;
    const fifth = client.request({ ":path": "/healthz" });
    fifth.on("response", () => {
      answered = true;
    });
    fifth.resume();
    await sleep(300);
    expect(answered).toBe(false);
    held[0]?.end("}");
    await eventually(() => answered, 5_000, "the fifth stream is answered once a slot frees");
    for (const stream of held) stream.close();
  });
});

describe("slow clients are cut off", () => {
  const env = { HEADERS_TIMEOUT_MS: "500", REQUEST_TIMEOUT_MS: "1000" };

  it("HTTP/1.1 headers sent too slowly: 408 and closed", async () => {
    const server = await start(env);
    const socket = await connectTo(server.port);
    socket.write(`POST ${PRICES} HTTP/1.1\r\nhost: x\r\n`);
    const trickle = setInterval(() => socket.writable && socket.write("x-slow: 1\r\n"), 100);
    try {
      expect(await closedWithin(socket, 5_000)).toMatch(/^HTTP\/1\.1 408 /);
    } finally {
      clearInterval(trickle);
    }
    expect(await counter(server.baseUrl, 'http_rejections_total{reason="request_timeout"}')).toBe(1);
  });

  it("a connection that never sends a byte is closed after the headers timeout", async () => {
    const server = await start(env);
    const socket = await connectTo(server.port);
    expect(await closedWithin(socket, 5_000)).toBe("");
    expect(await counter(server.baseUrl, 'http_rejections_total{reason="headers_timeout"}')).toBe(1);
  });

  it("HTTP/1.1 body at one byte per 100 ms: 408 and closed after REQUEST_TIMEOUT_MS", async () => {
    const server = await start(env);
    const socket = await connectTo(server.port);
    socket.write(
      `POST ${PRICES} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n{`,
    );
    const trickle = setInterval(() => socket.writable && socket.write(" "), 100);
    try {
      expect(await closedWithin(socket, 6_000)).toMatch(/^HTTP\/1\.1 408 /);
    } finally {
      clearInterval(trickle);
    }
  });

  it("HTTP/2 body at one byte per 100 ms: the stream is reset after REQUEST_TIMEOUT_MS", async () => {
    const server = await start(env);
    const client = http2.connect(server.baseUrl);
    defer(async () => {
      client.destroy();
    });
    const stream = client.request({ ":method": "POST", ":path": PRICES, "content-type": "application/json" });
    stream.on("error", () => {});
    stream.write("{");
    const trickle = setInterval(() => !stream.destroyed && stream.write(" "), 100);
    try {
      const rstCode = await new Promise<number>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error("stream still open after 6 s")), 6_000);
        stream.once("close", () => {
          clearTimeout(timer);
          resolve(stream.rstCode ?? -1);
        });
      });
      expect(rstCode).toBe(http2.constants.NGHTTP2_CANCEL);
    } finally {
      clearInterval(trickle);
    }
    // The connection itself stays usable.
    const ok = client.request({ ":path": "/healthz" });
    const status = await new Promise((resolve) => ok.once("response", (h) => resolve(h[":status"])));
    ok.resume();
    expect(status).toBe(200);
    expect(await counter(server.baseUrl, 'http_rejections_total{reason="request_timeout"}')).toBe(1);
  });

  it("oversized HTTP/1.1 headers: 431, counted", async () => {
    const server = await start();
    const socket = await connectTo(server.port);
    socket.write(`GET /healthz HTTP/1.1\r\nhost: x\r\nx-big: ${"a".repeat(20_000)}\r\n\r\n`);
    expect(await closedWithin(socket, 5_000)).toMatch(/^HTTP\/1\.1 431 /);
    expect(await counter(server.baseUrl, 'http_rejections_total{reason="headers_too_large"}')).toBe(1);
  });
});

describe("an oversized gRPC upload", () => {
  it("is answered resource_exhausted and the stream is reset while the client still uploads", async () => {
    const server = await start({ MAX_REQUEST_BYTES: "1024" });
    const client = http2.connect(server.baseUrl);
    defer(async () => {
      client.destroy();
    });
    const stream = client.request({
      ":method": "POST",
      ":path": PRICES,
      "content-type": "application/grpc",
      te: "trailers",
    });
    stream.on("error", () => {});
    let trailers: http2.IncomingHttpHeaders | undefined;
    stream.on("trailers", (t) => {
      trailers = t;
    });
    stream.resume();
    // A frame that announces 1 MiB, then its bytes, a chunk every 20 ms, forever.
    const prefix = Buffer.alloc(5);
    prefix.writeUInt32BE(1 << 20, 1);
    stream.write(prefix);
    const chunk = Buffer.alloc(4096, 1);
    const upload = setInterval(() => !stream.destroyed && stream.write(chunk), 20);
    try {
      const rstCode = await new Promise<number>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error("stream still open after 5 s")), 5_000);
        stream.once("close", () => {
          clearTimeout(timer);
          resolve(stream.rstCode ?? -1);
        });
      });
      expect(trailers?.["grpc-status"]).toBe("8"); // RESOURCE_EXHAUSTED
      expect(rstCode).toBe(http2.constants.NGHTTP2_NO_ERROR);
    } finally {
      clearInterval(upload);
    }
  });
});

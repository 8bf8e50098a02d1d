/**
 * Deadlines on every protocol: a call that answers after its deadline is deadline_exceeded (the
 * server's own verdict, checked with raw requests so no client enforces it first), and the largest
 * deadlines the protocols allow are clamped instead of overflowing Node's timers.
 */
import * as http2 from "node:http2";
import { create, toBinary } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GetAgentRequestSchema } from "../gen/agent/v1/agent_pb.ts";
import type { AgentStore } from "../src/agent/agent-store.ts";
import { createMemoryAgentStore } from "../src/agent/memory-agent-store.ts";
import { startMain } from "./support/main-process.ts";
import { type RunningServer, startServer } from "./support/start-server.ts";

const GET_AGENT = "/agent.v1.AgentService/GetAgent";
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A unary call over h2c with raw frames; resolves with the grpc-status and grpc-message. */
function rawGrpc(baseUrl: string, headers: Record<string, string>, contentType = "application/grpc") {
  const client = http2.connect(baseUrl);
  const body = toBinary(GetAgentRequestSchema, create(GetAgentRequestSchema, { agentId: "a".repeat(22) }));
  const frame = Buffer.alloc(5 + body.length);
  frame.writeUInt32BE(body.length, 1);
  frame.set(body, 5);
  return new Promise<{ status: string | undefined; message: string | undefined }>((resolve, reject) => {
    const stream = client.request({
      ":method": "POST",
      ":path": GET_AGENT,
      "content-type": contentType,
      te: "trailers",
      ...headers,
    });
    let status: string | undefined;
    let message: string | undefined;
    stream.on("response", (h) => {
      status ??= h["grpc-status"] as string | undefined;
      message ??= h["grpc-message"] as string | undefined;
    });
    stream.on("trailers", (t) => {
      status = t["grpc-status"] as string | undefined;
      message = t["grpc-message"] as string | undefined;
    });
    stream.resume();
    stream.on("close", () => {
      client.close();
      resolve({ status, message });
    });
    stream.on("error", reject);
    stream.end(frame);
  });
}

describe("a call that answers after its deadline", () => {
  let server: RunningServer;
  beforeAll(async () => {
    const memory = createMemoryAgentStore();
    // GetAgent takes 30 ms here, and ignores the call's signal as a slow dependency would.
    const slow: AgentStore = {
      ...memory,
      get: async (owner, id) => {
        await sleep(30);
        return memory.get(owner, id);
      },
    };
    server = await startServer({ overrides: { agentStore: slow } });
  });
  afterAll(() => server.close());

  it("Connect (HTTP/1.1 JSON): deadline_exceeded with connect-timeout-ms: 1", async () => {
    const res = await fetch(`${server.baseUrl}${GET_AGENT}`, {
      method: "POST",
      headers: { "content-type": "application/json", "connect-timeout-ms": "1" },
      body: JSON.stringify({ agentId: "a".repeat(22) }),
    });
    expect(((await res.json()) as { code: string }).code).toBe("deadline_exceeded");
  });

  it("Connect without a deadline still answers (not_found here)", async () => {
    const res = await fetch(`${server.baseUrl}${GET_AGENT}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ agentId: "a".repeat(22) }),
    });
    expect(((await res.json()) as { code: string }).code).toBe("not_found");
  });

  it("gRPC (h2c): DEADLINE_EXCEEDED with grpc-timeout: 1m", async () => {
    expect((await rawGrpc(server.baseUrl, { "grpc-timeout": "1m" })).status).toBe("4");
  });

  it("gRPC-Web (h2c): DEADLINE_EXCEEDED with grpc-timeout: 1m", async () => {
    const client = http2.connect(server.baseUrl);
    const body = toBinary(GetAgentRequestSchema, create(GetAgentRequestSchema, { agentId: "a".repeat(22) }));
    const frame = Buffer.alloc(5 + body.length);
    frame.writeUInt32BE(body.length, 1);
    frame.set(body, 5);
    const text = await new Promise<string>((resolve, reject) => {
      const stream = client.request({
        ":method": "POST",
        ":path": GET_AGENT,
        "content-type": "application/grpc-web+proto",
        "grpc-timeout": "1m",
      });
      const chunks: Buffer[] = [];
      let headerStatus = "";
      stream.on("response", (h) => {
        headerStatus = String(h["grpc-status"] ?? "");
      });
      stream.on("data", (c: Buffer) => chunks.push(c));
      stream.on("end", () => {
        client.close();
        resolve(`${headerStatus}|${Buffer.concat(chunks).toString("latin1")}`);
      });
      stream.on("error", reject);
      stream.end(frame);
    });
    expect(text).toMatch(/^4\||grpc-status:\s*4/);
  });
});

describe("the largest deadlines the protocols allow", () => {
  // On the lean path and on connect-node's (which takes every call with LEAN_UNARY=false).
  it.each([
    ["the lean path", {}],
    ["connect-node's handlers", { LEAN_UNARY: "false" }],
  ])(
    "are clamped on %s: answered normally, and Node prints no TimeoutOverflowWarning",
    async (_path, env) => {
      const main = await startMain(env);
      try {
        const base = `http://127.0.0.1:${main.port}`;
        for (let i = 0; i < 3; i++) {
          const res = await fetch(`${base}/token.v1.TokenService/GetTokenPrices`, {
            method: "POST",
            headers: { "content-type": "application/json", "connect-timeout-ms": "9999999999" },
            body: "{}",
          });
          expect(res.status).toBe(200);
        }
        expect((await rawGrpc(base, { "grpc-timeout": "99999999H" })).status).toBe("5"); // not_found: answered
        await sleep(100);
        expect(main.stderr()).not.toContain("TimeoutOverflowWarning");
      } finally {
        main.kill();
      }
    },
  );
});

/**
 * Input the service must bound, over every protocol: errors quote a caller's value only as a short
 * prefix (a 900 KB value makes a small error, and over gRPC a 64 KiB+ value still arrives as
 * invalid_argument rather than a transport error from oversized trailers), a config with thousands
 * of unknown settings makes a small error, and an amount must be a whole number of the token's
 * smallest units.
 */
import * as http from "node:http";
import * as http2 from "node:http2";
import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AgentService } from "../gen/agent/v1/agent_pb.ts";
import { createProtocols, type Outcome, type Protocol, withStructConfig } from "./support/callers.ts";
import { type RunningServer, startServer } from "./support/start-server.ts";

const TRANSFER = {
  source: "9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM",
  destination: "2ojv9BAiHUrvsm9gxDe7fJSzbNZSJcxZvf8dqmWGHG8S",
  amount: 1.5,
  token: "USDC",
  schedule: "daily",
};
const SWAP = {
  wallet: "9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM",
  inputToken: "BONK",
  outputToken: "SOL",
  amount: 1,
  schedule: "daily",
};
/** Every error message and detail stays under this, whatever the input's size. */
const SMALL = 2_048;

let server: RunningServer;
let protocols: Protocol[];
beforeAll(async () => {
  server = await startServer({ env: { MAX_REQUEST_BYTES: String(2 * 1024 * 1024) } });
  protocols = createProtocols(server.baseUrl).map(withStructConfig);
});
afterAll(async () => {
  for (const p of protocols) p.close();
  await server.close();
});

function expectInvalid(outcome: Outcome, field: string): string {
  expect(outcome.ok).toBe(false);
  if (outcome.ok) return "";
  expect(outcome.code).toBe(Code.InvalidArgument);
  expect(outcome.violations.map((v) => v.field)).toContain(field);
  return outcome.message;
}

describe.each([0, 1, 2, 3, 4])("protocol %#", (i) => {
  const p = () => protocols[i] as Protocol;

  it("a 900 KB type gets a small invalid_argument quoting a short prefix", async () => {
    const message = expectInvalid(
      await p().call(AgentService, "CreateAgent", { type: "x".repeat(900_000), config: TRANSFER }),
      "type",
    );
    expect(message.length).toBeLessThan(SMALL);
    expect(message).toContain("900000 characters");
  });

  it("a 70 KiB status filter still arrives as invalid_argument", async () => {
    const message = expectInvalid(
      await p().call(AgentService, "ListAgents", { status: "y".repeat(70_000) }),
      "status",
    );
    expect(message.length).toBeLessThan(SMALL);
  });

  it("a long value whose short prefix would end inside a character still arrives as invalid_argument", async () => {
    // 39 ASCII characters then emoji (two UTF-16 units each): a 40-unit cut splits the first one,
    // and a lone half cannot be percent-encoded into grpc-message, so the call was reset or hung.
    const outcome = await p().call(AgentService, "ListAgents", {
      status: `${"a".repeat(39)}${"😀".repeat(50)}`,
    });
    const message = expectInvalid(outcome, "status");
    expect(message.isWellFormed()).toBe(true);
    expect(message).toContain("139 characters");
  }, 10_000);

  it("5000 unknown settings with long names make a small error", async () => {
    const config: Record<string, unknown> = { ...TRANSFER };
    for (let k = 0; k < 5000; k++) config[`${"k".repeat(100)}${k}`] = k;
    const outcome = await p().call(AgentService, "CreateAgent", { type: "transfer", config });
    expectInvalid(outcome, "config");
    if (!outcome.ok) {
      expect(outcome.message.length).toBeLessThan(SMALL);
      expect(outcome.violations.length).toBeLessThanOrEqual(12);
    }
  });

  it.each([
    ["transfer", 5e-324, TRANSFER],
    ["transfer", 0.0000015, TRANSFER], // USDC has 6 decimals
    ["swap", 0.000001, SWAP], // BONK has 5
  ])("%s amount %s is refused naming config.amount and the rule", async (type, amount, config) => {
    const message = expectInvalid(
      await p().call(AgentService, "CreateAgent", { type, config: { ...config, amount } }),
      "config.amount",
    );
    expect(message).toMatch(
      /must be in (USDC|BONK) with at most [56] decimal places \(a multiple of 0\.0{4,5}1 /,
    );
  });

  it.each([
    ["transfer", 0.000001, TRANSFER],
    ["transfer", 0.1, TRANSFER],
    ["swap", 0.00001, SWAP],
    ["swap", 123456.78901, SWAP],
  ])("%s amount %s is accepted", async (type, amount, config) => {
    const outcome = await p().call(AgentService, "CreateAgent", { type, config: { ...config, amount } });
    expect(outcome.ok, outcome.ok ? "" : outcome.message).toBe(true);
  });
});

/**
 * JSON may carry lone UTF-16 surrogates as escapes (`"\ud800"`). protobuf-es refuses them in
 * string fields, but a google.protobuf.Struct key passes through to the config rules, which name
 * it. Over gRPC and gRPC-Web with JSON payloads the message travels percent-encoded in trailers,
 * where a lone surrogate made the encoding throw: the call never answered.
 */
describe("a config setting named by a lone surrogate", () => {
  const path = "/agent.v1.AgentService/CreateAgent";
  const body = Buffer.from(`{"type":"transfer","config":{"\\ud800":1}}`);
  const frame = (payload: Buffer) => {
    const out = Buffer.alloc(5 + payload.length);
    out.writeUInt32BE(payload.length, 1);
    payload.copy(out, 5);
    return out;
  };
  /** grpc-status and grpc-message of a gRPC-Web answer's trailer frame, or "no answer". */
  const grpcWebCall = (): Promise<{ status?: string; message?: string }> =>
    new Promise((resolve, reject) => {
      const req = http.request(
        `${server.baseUrl}${path}`,
        { method: "POST", headers: { "content-type": "application/grpc-web+json" }, timeout: 5000 },
        (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (chunk: Buffer) => chunks.push(chunk));
          res.on("end", () => {
            const text = Buffer.concat(chunks).toString("latin1");
            resolve({
              status: /grpc-status: ?(\d+)/.exec(text)?.[1],
              message: /grpc-message: ?([^\r\n]*)/.exec(text)?.[1],
            });
          });
        },
      );
      req.on("timeout", () => {
        req.destroy();
        reject(new Error("no answer within 5 s"));
      });
      req.on("error", reject);
      req.end(frame(body));
    });
  const grpcCall = (): Promise<{ status?: string; message?: string }> =>
    new Promise((resolve, reject) => {
      const session = http2.connect(server.baseUrl);
      session.on("error", reject);
      const stream = session.request({
        ":method": "POST",
        ":path": path,
        "content-type": "application/grpc+json",
        te: "trailers",
      });
      stream.setTimeout(5000, () => {
        session.destroy();
        reject(new Error("no answer within 5 s"));
      });
      stream.on("trailers", (trailers) => {
        resolve({
          status: trailers["grpc-status"] as string | undefined,
          message: trailers["grpc-message"] as string | undefined,
        });
        session.close();
      });
      stream.on("error", reject);
      stream.resume();
      stream.end(frame(body));
    });

  it.each([
    ["gRPC-Web (HTTP/1.1)", grpcWebCall],
    ["gRPC (HTTP/2)", grpcCall],
  ])(
    "over %s is answered invalid_argument naming the setting",
    async (_name, call) => {
      const answer = await call();
      expect(answer.status).toBe(String(Code.InvalidArgument));
      expect(decodeURIComponent(answer.message ?? "")).toContain(
        "config.\ufffd is not a transfer agent setting",
      );
    },
    10_000,
  );

  it("over Connect JSON gets a well-formed message", async () => {
    const res = await fetch(`${server.baseUrl}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body,
    });
    expect(res.status).toBe(400);
    const error = (await res.json()) as { message: string };
    expect(error.message.isWellFormed()).toBe(true);
  });
});

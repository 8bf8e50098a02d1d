/**
 * Input the service must bound, over every protocol: errors quote a caller's value only as a short
 * prefix (a 900 KB value makes a small error, and over gRPC a 64 KiB+ value still arrives as
 * invalid_argument rather than a transport error from oversized trailers), a config with thousands
 * of unknown settings makes a small error, and an amount must be a whole number of the token's
 * smallest units.
 */
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
    expect(message).toMatch(/whole number of (USDC|BONK) smallest units/);
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

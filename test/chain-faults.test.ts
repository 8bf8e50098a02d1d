/**
 * A cluster that misbehaves. The service reads a real chain (the embedded local chain, run apart
 * on its own port) through a proxy that the test turns into a cluster that is down, slower than the
 * caller's deadline, rate limiting with Retry-After, failing with 5xx, answering malformed JSON or
 * an oversized body. Each fault must give `unavailable` (or `deadline_exceeded` when the caller's
 * deadline passed) well before the caller's own deadline, be counted in /metrics, and leave the
 * service serving: the same call succeeds once the fault is gone, with no restart.
 */
import { mkdtempSync, rmSync } from "node:fs";
import * as http from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { AgentService } from "../gen/agent/v1/agent_pb.ts";
import { TokenService } from "../gen/token/v1/token_pb.ts";
import { localKey, type RunningLocalChain, startLocalChain } from "../src/local-chain/index.ts";
import { loadCatalog } from "../src/token/catalog.ts";
import { createProtocols, type Protocol } from "./support/callers.ts";
import { writeDelegateSeed, writeExecutorKeypair } from "./support/executor-keypair.ts";
import { type RunningServer, startServer } from "./support/start-server.ts";

const catalog = loadCatalog();
const USDC = catalog.tokens.find((t) => t.symbol === "USDC")?.mint as string;
const BONK = catalog.tokens.find((t) => t.symbol === "BONK")?.mint as string;
/** A token no other test here reads, so its mint is not cached when the cluster is down. */
const UNREAD = catalog.tokens.find((t) => !["USDC", "BONK", "SOL"].includes(t.symbol))?.symbol as string;
const directory = mkdtempSync(join(tmpdir(), "chain-faults-"));
/** A provider's key, as it rides in the RPC URL's path or query. */
const API_KEY = "k3y-0f-the-pr0v1der";
/** The callers' deadline: every fault must be answered well within it. */
const DEADLINE_MS = 8000;

type Fault =
  | { kind: "none" }
  | { kind: "slow"; ms: number }
  | { kind: "status"; status: number; retryAfter?: string }
  | { kind: "malformed" }
  | { kind: "huge"; bytes: number }
  | { kind: "reset" };

let chain: RunningLocalChain;
let proxy: http.Server;
let proxyPort: number;
let fault: Fault = { kind: "none" };
/** Requests that reached the proxy (the "cluster"). */
let requests = 0;
let server: RunningServer;
let connect: Protocol;

/** A cluster in front of the real local chain, misbehaving as `fault` says. */
function createProxy(): http.Server {
  return http.createServer((req, res) => {
    requests++;
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", async () => {
      const current = fault;
      switch (current.kind) {
        case "reset":
          req.socket.destroy();
          return;
        case "status":
          res.writeHead(
            current.status,
            current.retryAfter === undefined ? {} : { "retry-after": current.retryAfter },
          );
          res.end("busy");
          return;
        case "malformed":
          res
            .writeHead(200, { "content-type": "application/json" })
            .end('{"jsonrpc":"2.0","result":[{"signa');
          return;
        case "huge":
          res.writeHead(200, { "content-type": "application/json" });
          res.end(`{"jsonrpc":"2.0","id":1,"result":"${"x".repeat(current.bytes)}"}`);
          return;
        case "slow":
          await new Promise((resolve) => setTimeout(resolve, current.ms));
          break;
        case "none":
          break;
      }
      const answer = await chain.handler.handle(Buffer.concat(chunks).toString("utf8"));
      if (!res.destroyed) res.writeHead(200, { "content-type": "application/json" }).end(answer);
    });
  });
}

async function listen(on: http.Server, port: number): Promise<number> {
  await new Promise<void>((resolve) => on.listen(port, "127.0.0.1", resolve));
  return (on.address() as AddressInfo).port;
}

beforeAll(async () => {
  chain = await startLocalChain({ catalog, port: undefined, statePath: undefined, slotMs: 400 });
  proxy = createProxy();
  proxyPort = await listen(proxy, 0);
  writeExecutorKeypair(join(directory, "executor.json"));
  writeDelegateSeed(join(directory, "delegate.seed"));
  server = await startServer({
    env: {
      SOLANA_RPC_URL: `http://127.0.0.1:${proxyPort}/v1/${API_KEY}?api-key=${API_KEY}`,
      SOLANA_RPC_TIMEOUT_MS: "1000",
      SOLANA_RPC_MAX_RETRIES: "2",
      SOLANA_RPC_RETRY_BASE_MS: "50",
      SOLANA_RPC_MAX_RETRY_WAIT_MS: "1500",
      SOLANA_RPC_MAX_RESPONSE_BYTES: "262144",
      EXECUTOR_KEYPAIR: join(directory, "executor.json"),
      DELEGATE_SEED: join(directory, "delegate.seed"),
      // These tests call without keys; no agent here moves tokens.
      ALLOW_ANONYMOUS_TRANSFERS: "true",
    },
  });
  connect = createProtocols(server.baseUrl)[0] as Protocol;
});

afterAll(async () => {
  connect?.close();
  await server?.close();
  proxy?.closeAllConnections();
  await new Promise((resolve) => proxy?.close(resolve));
  rmSync(directory, { recursive: true, force: true });
  await chain?.close();
});

/** GetTokenTransactions with the callers' deadline: its outcome and how long it took. */
async function transactions(mint = USDC, timeoutMs = DEADLINE_MS) {
  const started = performance.now();
  const outcome = await connect.call(
    TokenService,
    "GetTokenTransactions",
    { mint, limit: 5 },
    { "connect-timeout-ms": String(timeoutMs) },
  );
  return { outcome, ms: performance.now() - started };
}

async function metric(outcome: string): Promise<number> {
  const text = await (await fetch(`${server.baseUrl}/metrics`)).text();
  let total = 0;
  for (const line of text.split("\n")) {
    if (line.startsWith("solana_rpc_requests_total{") && line.includes(`outcome="${outcome}"`)) {
      total += Number(line.slice(line.lastIndexOf(" ") + 1));
    }
  }
  return total;
}

/** The gRPC health status of a service, over the Connect protocol. */
async function health(service: string): Promise<string> {
  const response = await fetch(`${server.baseUrl}/grpc.health.v1.Health/Check`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ service }),
  });
  return ((await response.json()) as { status: string }).status;
}

async function expectRecovered() {
  fault = { kind: "none" };
  const { outcome } = await transactions();
  expect(outcome.ok, outcome.ok ? "" : outcome.message).toBe(true);
}

describe("a cluster that misbehaves", () => {
  it("answers through the proxy while the cluster is well", async () => {
    await expectRecovered();
    expect(await metric("ok")).toBeGreaterThan(0);
  });

  it.each([
    ["answering 500", { kind: "status", status: 500 }, "http_error"],
    ["answering 503", { kind: "status", status: 503 }, "http_error"],
    ["resetting connections", { kind: "reset" }, "unreachable"],
    ["answering malformed JSON", { kind: "malformed" }, "bad_response"],
    ["answering 10 MB", { kind: "huge", bytes: 10 * 1024 * 1024 }, "too_large"],
    ["slower than the request timeout", { kind: "slow", ms: 2500 }, "timeout"],
  ] as [string, Fault, string][])(
    "%s: unavailable well within the deadline, counted, and recovered",
    async (_name, injected, counted) => {
      const before = await metric(counted);
      fault = injected;
      const { outcome, ms } = await transactions();
      expect(outcome.ok).toBe(false);
      if (!outcome.ok) {
        expect(outcome.code).toBe(Code.Unavailable);
        // The cluster's own text and the URL never reach callers.
        expect(outcome.message).not.toContain(String(proxyPort));
        expect(outcome.message).not.toMatch(/busy|signa|x{20}/);
      }
      expect(ms).toBeLessThan(DEADLINE_MS);
      expect(await metric(counted)).toBeGreaterThan(before);
      await expectRecovered();
    },
  );

  it("slower than the caller's deadline: deadline_exceeded, then recovered", async () => {
    fault = { kind: "slow", ms: 900 };
    const { outcome } = await transactions(BONK, 300);
    expect(outcome.ok).toBe(false);
    if (!outcome.ok) expect(outcome.code).toBe(Code.DeadlineExceeded);
    await expectRecovered();
  });

  it("429 with a short Retry-After: waits it out and answers", async () => {
    fault = { kind: "status", status: 429, retryAfter: "1" };
    const before = await metric("rate_limited");
    // The first attempt is refused; by the retry, the cluster is well again.
    setTimeout(() => {
      fault = { kind: "none" };
    }, 300);
    const { outcome, ms } = await transactions();
    expect(outcome.ok, outcome.ok ? "" : outcome.message).toBe(true);
    expect(ms).toBeGreaterThanOrEqual(900);
    expect(await metric("rate_limited")).toBeGreaterThan(before);
  });

  it("429 with a long Retry-After: unavailable at once, and later calls wait without calling the cluster", async () => {
    fault = { kind: "status", status: 429, retryAfter: "3" };
    const first = await transactions();
    expect(first.outcome.ok).toBe(false);
    if (!first.outcome.ok) {
      expect(first.outcome.code).toBe(Code.Unavailable);
      expect(first.outcome.message).toContain("rate limiting");
    }
    fault = { kind: "none" };
    const seen = requests;
    const during = await transactions(BONK);
    expect(during.outcome.ok).toBe(false);
    if (!during.outcome.ok) expect(during.outcome.code).toBe(Code.Unavailable);
    expect(requests).toBe(seen);
    expect(await metric("overloaded")).toBeGreaterThan(0);
    // Once the cluster's wait has passed, calls go through again.
    await new Promise((resolve) => setTimeout(resolve, 3100));
    await expectRecovered();
  });

  it("down (nothing listening): unavailable at once, and back when it is", async () => {
    proxy.closeAllConnections();
    await new Promise((resolve) => proxy.close(resolve));
    const { outcome, ms } = await transactions();
    expect(outcome.ok).toBe(false);
    if (!outcome.ok) expect(outcome.code).toBe(Code.Unavailable);
    expect(ms).toBeLessThan(DEADLINE_MS);
    // Health says which service cannot serve: token calls need the chain, agent calls do not.
    expect(await health("token.v1.TokenService")).toBe("NOT_SERVING");
    expect(await health("agent.v1.AgentService")).toBe("SERVING");
    expect((await fetch(`${server.baseUrl}/readyz`)).status).toBe(503);
    proxy = createProxy();
    await listen(proxy, proxyPort);
    await expectRecovered();
    await vi.waitFor(async () => expect(await health("token.v1.TokenService")).toBe("SERVING"), {
      timeout: 5000,
    });
    expect((await fetch(`${server.baseUrl}/readyz`)).status).toBe(200);
  });

  it("agent calls that need the chain answer unavailable, not invalid_argument, and recover", async () => {
    const config = {
      // A seeded wallet: it holds every catalog token, so PrepareApproval has a token account to name.
      source: localKey("wallet 1").address,
      destination: "2ojv9BAiHUrvsm9gxDe7fJSzbNZSJcxZvf8dqmWGHG8S",
      amount: 1,
      schedule: "daily",
    };
    const created = await connect.call(AgentService, "CreateAgent", {
      type: "transfer",
      config: { ...config, token: "USDC" },
    });
    if (!created.ok) throw new Error(created.message);
    const agentId = (created.json.data as { agentId: string }).agentId;
    fault = { kind: "status", status: 503 };
    // The mint check of a token not read before, and the approval's blockhash, need the cluster.
    const create = await connect.call(AgentService, "CreateAgent", {
      type: "transfer",
      config: { ...config, token: UNREAD },
    });
    const approval = await connect.call(AgentService, "PrepareApproval", { agentId, allowance: 10 });
    for (const outcome of [create, approval]) {
      expect(outcome.ok).toBe(false);
      if (!outcome.ok) {
        expect(outcome.code).toBe(Code.Unavailable);
        expect(outcome.message).not.toContain(String(proxyPort));
      }
    }
    fault = { kind: "none" };
    const again = await connect.call(AgentService, "PrepareApproval", { agentId, allowance: 10 });
    expect(again.ok, again.ok ? "" : again.message).toBe(true);
    const recreated = await connect.call(AgentService, "CreateAgent", {
      type: "transfer",
      config: { ...config, token: UNREAD },
    });
    expect(recreated.ok, recreated.ok ? "" : recreated.message).toBe(true);
  });

  it("never logs the cluster's URL, which carries the provider's key", () => {
    const text = JSON.stringify(server.logs);
    expect(text).toContain("rpc"); // the log is there...
    expect(text).not.toContain(API_KEY); // ...and the key is not
  });
});

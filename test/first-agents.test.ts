/**
 * The README's examples, run as a reader runs them: the service a real process started as
 * `SCHEDULE_TIME_SCALE=1200 npm start` starts it (an hourly agent runs every 3 s; the embedded
 * chain, no JUPITER_SWAP_URL: the local pools route the swaps), each script in a process of its own,
 * told only where the service and its chain are. Both at once against the one service, as two
 * readers would be.
 * - examples/first-transfer-agent.ts, the first ten minutes: it must end well, print the agent's
 *   id, and leave three transfers the chain itself confirms.
 * - examples/first-swap-agent.ts: it must end well, print the agent's id, and show three swaps that
 *   moved the wallet's balances by exactly the amounts and the quoted outputs, then the agent paused
 *   and the approval revoked, as the chain and the service confirm.
 */
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { type Address, createSolanaRpc, type Signature } from "@solana/kit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type MainProcess, startMain } from "./support/main-process.ts";

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL("..", import.meta.url));
const USDC = "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v" as Address;

let service: MainProcess & { port: number };
let rpcUrl: string;
beforeAll(async () => {
  service = await startMain({ SCHEDULE_TIME_SCALE: "1200" });
  const chain = await service.waitForLog((l) => typeof l.solana_rpc === "string");
  rpcUrl = chain.solana_rpc as string;
});
afterAll(() => service?.kill());

describe.concurrent("examples/first-transfer-agent.ts", () => {
  it("funds a wallet, makes an agent, signs its approval, and sees three runs land", async () => {
    const apiUrl = `http://127.0.0.1:${service.port}`;
    const { stdout, stderr } = await run(process.execPath, ["examples/first-transfer-agent.ts"], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? "", API_URL: apiUrl, RPC_URL: rpcUrl },
      timeout: 60_000,
    });
    const agentId = stdout.trim();
    expect(agentId).toMatch(/^[A-Za-z0-9_-]{22}$/);
    // Each step said what it did, the pending agent why it waits.
    for (const step of [
      "1. wallet",
      "2. funded",
      "3. agent",
      "4. approved delegate",
      "5. run 3",
      "6. ",
      "7. agent",
      "8. revoked",
    ])
      expect(stderr).toContain(step);
    expect(stderr).toMatch(/is pending: waiting for an approval/);
    expect(stderr).toMatch(/holds 4\.5 USDC on the chain/);

    // The service agrees, and the chain confirms every run's transaction.
    const runs = (await (await fetch(`${apiUrl}/v1/agents/${agentId}/runs?limit=100`)).json()) as {
      data: { runs: { outcome: string; result: { signature: string; amountUnits: string } }[] };
    };
    const succeeded = runs.data.runs.filter((r) => r.outcome === "succeeded");
    expect(succeeded.length).toBeGreaterThanOrEqual(3);
    const signatures = succeeded.map((r) => r.result.signature as Signature);
    const { value } = await createSolanaRpc(rpcUrl).getSignatureStatuses(signatures).send();
    for (const status of value) expect(status?.err).toBeNull();
    expect(succeeded.every((r) => r.result.amountUnits === "1500000")).toBe(true);

    // It does not outlive its allowance: paused, it is still paused (not failed) a while later,
    // and the wallet's USDC account has no delegate.
    expect(stderr).toMatch(/7\. agent \S+ is paused/);
    await new Promise((resolve) => setTimeout(resolve, 4 * 3_000));
    const agent = (await (await fetch(`${apiUrl}/v1/agents/${agentId}`)).json()) as {
      data: { status: string };
    };
    expect(agent.data.status).toBe("paused");
    const later = (await (await fetch(`${apiUrl}/v1/agents/${agentId}/runs?limit=100`)).json()) as {
      data: { runs: unknown[] };
    };
    expect(later.data.runs.length).toBe(runs.data.runs.length);
    const wallet = /1\. wallet (\w+)/.exec(stderr)?.[1] as Address;
    const { value: accounts } = await createSolanaRpc(rpcUrl)
      .getTokenAccountsByOwner(wallet, { mint: USDC }, { encoding: "jsonParsed" })
      .send();
    expect(accounts[0]?.account.data.parsed.info.delegate).toBeUndefined();
  }, 90_000);
});

describe.concurrent("examples/first-swap-agent.ts", () => {
  it("funds a wallet, makes a swap agent, sees three swaps move its balances exactly, pauses it and revokes", async () => {
    const apiUrl = `http://127.0.0.1:${service.port}`;
    const { stdout, stderr } = await run(process.execPath, ["examples/first-swap-agent.ts"], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? "", API_URL: apiUrl, RPC_URL: rpcUrl },
      timeout: 75_000,
    });
    const agentId = stdout.trim();
    expect(agentId).toMatch(/^[A-Za-z0-9_-]{22}$/);
    for (const step of [
      "1. wallet",
      "2. funded",
      "3. agent",
      "4. approved",
      "5. swap 3",
      "6. after",
      "7. agent",
      "8. revoked",
    ])
      expect(stderr).toContain(step);
    expect(stderr).toMatch(/before: 100\.000000 USDC, 0\.000000 JUP/);
    expect(stderr).toMatch(/after: 95\.500000 USDC \(-4\.500000\)/);
    expect(stderr).toMatch(
      /notice: swap routes come from local pools on the embedded development chain, not Jupiter/,
    );
    expect(stderr).toMatch(/route Local dev-chain pool \(not Jupiter\)/);
    expect(stderr).toMatch(/is paused/);

    // The service agrees: three swaps, each landed, the agent paused with its notice.
    const runs = (await (await fetch(`${apiUrl}/v1/agents/${agentId}/runs?limit=100`)).json()) as {
      data: {
        runs: { outcome: string; result: { signature: string; outAmountUnits: string; price: number } }[];
      };
    };
    const succeeded = runs.data.runs.filter((r) => r.outcome === "succeeded");
    expect(succeeded).toHaveLength(3);
    const rpc = createSolanaRpc(rpcUrl);
    const { value } = await rpc
      .getSignatureStatuses(succeeded.map((r) => r.result.signature as Signature))
      .send();
    for (const status of value) expect(status?.err).toBeNull();
    // The price the runs show is rounded, not a double's noise (1.9939900000000002).
    for (const r of succeeded) expect(Number(r.result.price.toPrecision(12))).toBe(r.result.price);
    const agent = (await (await fetch(`${apiUrl}/v1/agents/${agentId}`)).json()) as {
      data: Record<string, string>;
    };
    expect(agent.data.status).toBe("paused");
    expect(agent.data.notice).toMatch(/not Jupiter/);
    // The wallet's USDC account has no delegate any more.
    const wallet = /1\. wallet (\w+)/.exec(stderr)?.[1] as Address;
    const { value: accounts } = await rpc
      .getTokenAccountsByOwner(wallet, { mint: USDC }, { encoding: "jsonParsed" })
      .send();
    expect(accounts[0]?.account.data.parsed.info.delegate).toBeUndefined();
  }, 100_000);
});

describe("the examples against a server that requires keys", () => {
  it("stop at the first call and say to set API_KEY", async () => {
    const keyed = await startMain({ AUTH_MODE: "apikey", ADMIN_API_KEY: "k".repeat(40) });
    try {
      const chain = await keyed.waitForLog((l) => typeof l.solana_rpc === "string");
      for (const example of ["examples/first-swap-agent.ts", "examples/first-transfer-agent.ts"]) {
        const failed = await run(process.execPath, [example], {
          cwd: ROOT,
          env: {
            PATH: process.env.PATH ?? "",
            API_URL: `http://127.0.0.1:${keyed.port}`,
            RPC_URL: chain.solana_rpc as string,
          },
          timeout: 30_000,
        }).then(
          () => undefined,
          (error: { code: number; stderr: string }) => error,
        );
        expect(failed?.code, example).not.toBe(0);
        expect(failed?.stderr, example).toMatch(
          /POST \/v1\/agents: HTTP 401: this service requires a key: set API_KEY/,
        );
      }
    } finally {
      keyed.kill();
    }
  }, 60_000);
});

/**
 * The swap path's chain requests, counted at the transport (the service's
 * `solana_rpc_requests_total`, by method): one swap agent on the embedded chain and the
 * Jupiter-shaped test server, its route through a real lookup table, runs N slots in a row, and
 * the requests between its first and its last success are divided by the swaps between. The
 * route's accounts and tables are one getMultipleAccounts, the simulation answers the blockhash,
 * the send's first status call finds it landed, and nothing is read back: at most 4 a swap, even
 * alone (many at once share statuses too; see docs/performance.md).
 */
import type { Address } from "@solana/kit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadCatalog } from "../src/token/catalog.ts";
import { type AgentOnChain, fastScheduleEnv } from "./support/agent-on-chain.ts";
import type { RunningServer } from "./support/start-server.ts";
import { type SwapOnChain, startSwapOnChain } from "./support/swap-on-chain.ts";
import { type Json, until } from "./support/transfer-owner.ts";

const catalog = loadCatalog().tokens;
const USDC = catalog.find((t) => t.symbol === "USDC")?.mint as Address;
const JUP = catalog.find((t) => t.symbol === "JUP")?.mint as Address;
const SLOT_MS = 3_000;
/** Swaps counted, after the first (whose window would hold the agent's activation). */
const SWAPS = 4;

/** `solana_rpc_requests_total` by method, summed over outcomes. */
async function chainRequests(baseUrl: string): Promise<Map<string, number>> {
  const text = await (await fetch(`${baseUrl}/metrics`)).text();
  const byMethod = new Map<string, number>();
  for (const m of text.matchAll(/^solana_rpc_requests_total\{([^}]*)\} (\S+)$/gm)) {
    const method = /method="([^"]*)"/.exec(m[1] as string)?.[1] ?? "";
    byMethod.set(method, (byMethod.get(method) ?? 0) + Number(m[2]));
  }
  return byMethod;
}

describe("a swap's chain requests, at the transport", () => {
  let swapChain: SwapOnChain | undefined;
  let server: RunningServer;
  let owners: AgentOnChain["owners"];
  let owner: AgentOnChain["owner"];

  beforeAll(async () => {
    swapChain = await startSwapOnChain({
      env: fastScheduleEnv(SLOT_MS),
      funds: [[USDC, 100_000_000n]],
      jupiter: {
        pools: [{ mintA: USDC, mintB: JUP, reserveA: 1_000_000_000_000n, reserveB: 2_000_000_000_000n }],
        lookupTable: true,
      },
    });
    ({ server, owners, owner } = swapChain);
  });

  afterAll(async () => {
    await swapChain?.stop();
  });

  it(`is at most 4 a swap, none of them reading the landed transaction back`, async () => {
    const { agentId } = await owners.ok("POST", "/v1/agents", {
      type: "swap",
      config: {
        wallet: owner.address,
        inputToken: "USDC",
        outputToken: "JUP",
        amount: 1,
        schedule: "hourly",
        slippageBps: 100,
      },
    });
    await owners.approve(agentId as string, 100, owner);
    const succeeded = async (n: number) =>
      until(
        async () => {
          const runs = await owners.runsOf(agentId as string);
          const done = runs.filter((r) => r.outcome === "succeeded");
          return done.length >= n ? runs : undefined;
        },
        (n + 4) * SLOT_MS + 20_000,
        `${n} swaps succeeded`,
      );
    // Between slots (3 s apart, a swap takes well under one), no run is in flight.
    await succeeded(1);
    const before = await chainRequests(server.baseUrl);
    const runs = await succeeded(1 + SWAPS);
    const after = await chainRequests(server.baseUrl);
    const delta = new Map([...after].map(([method, n]) => [method, n - (before.get(method) ?? 0)]));
    const swaps = runs.filter((r) => r.outcome === "succeeded").length - 1;
    expect(runs.filter((r) => r.outcome === "failed")).toEqual([]);
    expect(swaps).toBeGreaterThanOrEqual(SWAPS);

    // The executor's balance watcher reads after runs (at most once in 2 s): not the swap path.
    const swapPath = [...delta].filter(([method]) => method !== "getBalance");
    const total = swapPath.reduce((sum, [, n]) => sum + n, 0);
    expect(total / swaps, JSON.stringify(Object.fromEntries(delta))).toBeLessThanOrEqual(4);
    // One read of the accounts and tables, one simulation (which answers the blockhash), one send.
    expect(delta.get("getMultipleAccounts") ?? 0).toBeLessThanOrEqual(swaps + 1);
    expect(delta.get("getAccountInfo") ?? 0).toBe(0);
    expect(delta.get("getLatestBlockhash") ?? 0).toBe(0);
    expect(delta.get("getTransaction") ?? 0).toBe(0);
    expect(delta.get("simulateTransaction") ?? 0).toBeLessThanOrEqual(swaps + 1);
    expect(delta.get("sendTransaction") ?? 0).toBeLessThanOrEqual(swaps + 1);
    // What moved was taken from the simulation; the chain agrees (the test server pays exactly its quote).
    for (const run of runs.filter((r) => r.outcome === "succeeded")) {
      expect((run.result as Json).amountsFrom).toBe("simulation");
    }
  });
});

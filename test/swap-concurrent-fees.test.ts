/**
 * Swaps of many wallets due at once, on the embedded chain: the executor pays every run's fees
 * and rent, so between one run's read of the executor's account and its simulation, other runs'
 * transactions land and spend the executor's lamports. The end-state check holds the executor to
 * what the cluster's simulation says it held on the very state it simulated on (preBalances[0]),
 * not to that stale read: no run is refused for the others' fees. (It once was, for about four
 * runs in ten at the bench's load: a route, a read and a simulation each, for nothing.)
 */
import { type Address, generateKeyPairSigner, type KeyPairSigner } from "@solana/kit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadCatalog } from "../src/token/catalog.ts";
import { type AgentOnChain, fastScheduleEnv } from "./support/agent-on-chain.ts";
import { type SwapOnChain, startSwapOnChain } from "./support/swap-on-chain.ts";
import { until } from "./support/transfer-owner.ts";

const catalog = loadCatalog().tokens;
const USDC = catalog.find((t) => t.symbol === "USDC")?.mint as Address;
const JUP = catalog.find((t) => t.symbol === "JUP")?.mint as Address;
/** Long enough for every wallet's agent to be approved and active before one slot, due together. */
const SLOT_MS = 8_000;
const WALLETS = 12;

describe("swaps of many wallets due at once", () => {
  let swapChain: SwapOnChain | undefined;
  let chain: AgentOnChain["chain"];
  let owners: AgentOnChain["owners"];

  beforeAll(async () => {
    swapChain = await startSwapOnChain({
      env: fastScheduleEnv(SLOT_MS),
      funds: [],
      jupiter: {
        // A pool per wallet: a pool's output vault has one delegate at a time.
        pools: Array.from({ length: WALLETS }, () => ({
          mintA: USDC,
          mintB: JUP,
          reserveA: 1_000_000_000_000n,
          reserveB: 2_000_000_000_000n,
        })),
        poolPerTaker: true,
      },
    });
    ({ owners, chain } = swapChain);
  });

  afterAll(async () => {
    await swapChain?.stop();
  });

  it("are none refused for the fees the others' transactions took from the executor", async () => {
    const wallets: KeyPairSigner[] = await Promise.all(
      Array.from({ length: WALLETS }, () => generateKeyPairSigner()),
    );
    for (const wallet of wallets) {
      await chain.airdrop(wallet.address, 1n);
      await chain.setTokenBalance(wallet.address, USDC, 100_000_000n);
    }
    // Made and approved together: their slots are anchored within moments of one another.
    const agentIds = await Promise.all(
      wallets.map(async (wallet) => {
        const { agentId } = await owners.ok("POST", "/v1/agents", {
          type: "swap",
          config: {
            wallet: wallet.address,
            inputToken: "USDC",
            outputToken: "JUP",
            amount: 1,
            schedule: "hourly",
            slippageBps: 100,
          },
        });
        await owners.approve(agentId as string, 100, wallet);
        return agentId as string;
      }),
    );
    const runsOfAll = async () => Promise.all(agentIds.map((id) => owners.runsOf(id)));
    const all = await until(
      async () => {
        const runs = await runsOfAll();
        return runs.every((r) => r.some((run) => run.outcome === "succeeded")) ? runs : undefined;
      },
      4 * SLOT_MS + 30_000,
      `every one of ${WALLETS} wallets' swaps succeeded`,
    );
    const failed = all.flat().filter((run) => run.outcome === "failed");
    expect(failed.map((run) => run.error)).toEqual([]);
    // What the case is about happened: runs were under way at once, each one's transaction able to
    // land between another's read and its simulation. (When they were due is not the point: on a
    // loaded machine the agents' creations, hence their slots, spread over seconds, and their runs
    // as well.)
    const intervals = all
      .flat()
      .filter((run) => run.startedAt !== undefined && run.finishedAt !== undefined)
      .map((run) => ({
        start: Date.parse(run.startedAt as string),
        end: Date.parse(run.finishedAt as string),
      }));
    const mostAtOnce = Math.max(
      ...intervals.map(({ start }) => intervals.filter((r) => r.start <= start && start < r.end).length),
    );
    expect(mostAtOnce, "runs under way at once").toBeGreaterThanOrEqual(2);
  });
});

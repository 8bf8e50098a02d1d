/**
 * Issue 53's N5, rerun: a swap's reference price is a fresh one or none. The service prices from a
 * Jupiter-shaped Price API (support/fake-jupiter.ts) and routes through the Jupiter-shaped Swap
 * API on its embedded chain. The Price API says USDT is worth 1,000,000 USD (a hostile or broken
 * answer), the service caches it, then the Price API answers 503: the cached price is now stale,
 * served to displays for up to PRICE_MAX_STALE_MS. A route quoting 1 base unit of USDT for 1 USDC
 * (0.000001 USDT per USDC) is within that stale reference; the run must not take it: it fails
 * saying no fresh price could be had, and is retried. Displays keep the stale price meanwhile. Once
 * the Price API answers again (honestly), a later attempt of the same slot swaps.
 */
import type { Address } from "@solana/kit";
import { findAssociatedTokenPda, TOKEN_PROGRAM_ADDRESS } from "@solana-program/token";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadCatalog } from "../src/token/catalog.ts";
import { fastScheduleEnv } from "./support/agent-on-chain.ts";
import { DOC_PRICES, type FakeJupiter, type FakePrice, startFakeJupiter } from "./support/fake-jupiter.ts";
import { createAnswerSwitch, HOSTILE_ROUTES } from "./support/hostile-swap-routes.ts";
import { type SwapOnChain, startSwapOnChain } from "./support/swap-on-chain.ts";
import { type Json, until } from "./support/transfer-owner.ts";

const catalog = loadCatalog().tokens;
const mintOf = (symbol: string) => catalog.find((t) => t.symbol === symbol)?.mint as Address;
const USDC = mintOf("USDC");
const USDT = mintOf("USDT");
const SLOT_MS = 3_000;
const TTL_MS = 300;
const RESERVE = 1_000_000_000_000n;

const priced = (usdPrice: number): FakePrice => ({
  ...(DOC_PRICES.EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v as FakePrice),
  usdPrice,
});

describe("a swap's reference price is fresh or there is none (N5)", () => {
  let prices: FakeJupiter;
  let swapChain: SwapOnChain | undefined;
  const answers = createAnswerSwitch();

  beforeAll(async () => {
    prices = await startFakeJupiter();
    swapChain = await startSwapOnChain({
      env: {
        ...fastScheduleEnv(SLOT_MS),
        JUPITER_API_URL: prices.url,
        PRICE_TTL_MS: String(TTL_MS),
        // Stale prices stay servable all through the test, as the 300 s default would.
        PRICE_MAX_STALE_MS: "300000",
        // The circuit the 503s open lets a trial through soon after the Price API is back.
        JUPITER_BREAKER_OPEN_MS: "200",
        // The slot is retried until the Price API is back (within one slot's attempts).
        SCHEDULER_MAX_ATTEMPTS: "100",
        SCHEDULER_RETRY_MAX_MS: "200",
      },
      funds: [
        [USDC, 100_000_000n],
        [USDT, 0n],
      ],
      jupiter: {
        pools: [{ mintA: USDC, mintB: USDT, reserveA: RESERVE, reserveB: RESERVE }],
        mutate: answers.mutate,
      },
    });
  });

  afterAll(async () => {
    await swapChain?.stop();
    await prices?.close();
  });

  it("refuses a stale reference, retries, keeps showing the stale price, and swaps once prices are fresh", async () => {
    const { owners, owner, server } = swapChain as SwapOnChain;
    const shown = async () => {
      const res = await fetch(`${server.baseUrl}/v1/tokens/prices?mints=${USDC}&mints=${USDT}`);
      expect(res.status).toBe(200);
      return ((await res.json()) as { data: { price: number; asOf: string }[] }).data;
    };
    const usdcAccount = (
      await findAssociatedTokenPda({ owner: owner.address, mint: USDC, tokenProgram: TOKEN_PROGRAM_ADDRESS })
    )[0];

    // The hostile price, cached: USDT at 1,000,000 USD makes 0.000001 USDT per USDC the reference.
    prices.prices.set(USDC, priced(1));
    prices.prices.set(USDT, priced(1_000_000));
    const cached = await shown();
    expect(cached.map((p) => p.price)).toEqual([1, 1_000_000]);
    // The Price API goes down, and the cached prices grow stale.
    prices.fault = { kind: "status", status: 503, path: "/price/" };
    await new Promise((resolve) => setTimeout(resolve, TTL_MS + 100));

    // A route quoting 1 base unit of USDT for the run's 1 USDC: 0.000001 USDT per USDC.
    answers.use(HOSTILE_ROUTES["out-amount-one"]);
    const usdcBefore = await owners.balance(usdcAccount);
    const agentId = (
      await owners.ok("POST", "/v1/agents", {
        type: "swap",
        config: {
          wallet: owner.address,
          inputToken: "USDC",
          outputToken: "USDT",
          amount: 1,
          schedule: "hourly",
          slippageBps: 100,
        },
      })
    ).agentId as string;
    await owners.approve(agentId, 50, owner);

    // A second attempt of the slot, or (before the fix) the hostile route's success.
    const retried = await until(
      async () =>
        (await owners.runsOf(agentId)).find(
          (r) => r.outcome === "succeeded" || (r.outcome === "failed" && (r.attempt as number) >= 2),
        ),
      3 * SLOT_MS + 15_000,
      "a run on the stale price retried",
    );
    expect(retried.outcome, JSON.stringify(retried.result)).toBe("failed");
    expect(retried.error).toMatch(
      new RegExp(
        `no fresh price to check the swap's caps and quote against: the price of (${USDC}|${USDT}) is stale \\(obtained [\\d.]+ s ago, fresh for 0\\.3 s\\) and could not be refreshed: Jupiter answered HTTP 503`,
      ),
    );
    const onStale = await owners.runsOf(agentId);
    expect(onStale.filter((r) => r.outcome !== "failed")).toEqual([]);
    expect(await owners.balance(usdcAccount)).toBe(usdcBefore);
    // Displays still serve the stale prices, with the asOf of when they were obtained.
    expect(await shown()).toEqual(cached);

    // The Price API answers again, honestly; the route is honest too.
    prices.prices.set(USDT, priced(1));
    prices.fault = undefined;
    answers.use(undefined);
    const swapped = await until(
      async () => (await owners.runsOf(agentId)).find((r) => r.outcome === "succeeded"),
      3 * SLOT_MS + 15_000,
      "the swap once prices are fresh",
    );
    // The same slot, retried: the outage cost it attempts, not the slot.
    expect(swapped.scheduledAt).toBe(retried.scheduledAt);
    expect(swapped.attempt as number).toBeGreaterThan(retried.attempt as number);
    expect((swapped.result as Json).inAmountUnits).toBe("1000000");
    expect(await owners.balance(usdcAccount)).toBe(usdcBefore - 1_000_000n);
    await owners.ok("DELETE", `/v1/agents/${agentId}`);
  });
});

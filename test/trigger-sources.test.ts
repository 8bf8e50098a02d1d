/**
 * Trigger orders with two price sources (TRIGGER_PRICE_SOURCES=prices,pyth), on the embedded local
 * chain: the service's own prices from a Jupiter-shaped Price API (support/fake-jupiter.ts) and
 * Pyth's from a Hermes-shaped server (support/fake-hermes.ts), fills through the Jupiter-shaped
 * Swap API on a real USDC/JUP pool (0.5 USDC per JUP). With two fresh sources the reference is
 * their median, the mean of the two: an order fires on it, not on either source alone. A Pyth
 * price whose publish_time is older than PRICE_TTL_MS is no observation, however fresh Hermes'
 * answer: only the other source counts, until Pyth publishes again.
 */
import type { Address } from "@solana/kit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fastScheduleEnv } from "./support/agent-on-chain.ts";
import { type FakeHermes, hermesPrice, startFakeHermes } from "./support/fake-hermes.ts";
import { type FakeJupiter, startFakeJupiter } from "./support/fake-jupiter.ts";
import { type SwapOnChain, startSwapOnChain } from "./support/swap-on-chain.ts";
import { type Json, until } from "./support/transfer-owner.ts";
import {
  AMOUNT,
  AMOUNT_UNITS,
  JUP,
  priced,
  RESERVE_JUP,
  RESERVE_USDC,
  tokenAccountOf,
  USDC,
} from "./support/trigger-market.ts";

/** A made-up feed id: the operator names the real one (none is built in). */
const JUP_FEED = "4a".repeat(32);
/** Pyth's publish_time is in whole seconds: a fresh Pyth price is up to a second old. */
const TTL_MS = 2_000;
const HOLD_MS = 300;

describe("trigger orders on two price sources: Jupiter's and Pyth's", () => {
  let jupiter: FakeJupiter;
  let hermes: FakeHermes;
  let swapChain: SwapOnChain | undefined;
  let ownerJup: Address;
  const s = () => swapChain as SwapOnChain;
  const ok = (method: string, path: string, body?: object) => s().owners.ok(method, path, body);
  const agent = (agentId: string) => ok("GET", `/v1/agents/${agentId}`);
  const runs = (agentId: string) => s().owners.runsOf(agentId);
  /** Pyth publishing `usd` now, at every request. */
  const pythLive = (usd: number) => hermes.feeds.set(JUP_FEED, () => hermesPrice(usd));
  /** Pyth's last price of JUP, `usd`, published a minute ago. */
  const pythStale = (usd: number) =>
    hermes.feeds.set(JUP_FEED, hermesPrice(usd, new Date(Date.now() - 60_000)));
  /** Waits until Hermes was asked for JUP `n` more times: `n` looks of the watch at least. */
  const looks = async (n: number) => {
    const asked = () => hermes.requests.filter((r) => r.ids.includes(JUP_FEED)).length;
    const start = asked();
    await until(async () => (asked() >= start + n ? true : undefined), 10_000, `${n} Pyth requests`);
  };
  const settled = (agentId: string, status: string) =>
    until(
      async () => {
        const a = await agent(agentId);
        return a.status === status ? a : undefined;
      },
      20_000,
      `the order ${status}`,
    );

  /** A stop-loss selling AMOUNT JUP for USDC below 0.45, approved by the wallet and active. */
  async function stopLoss(): Promise<string> {
    const agentId = (
      await ok("POST", "/v1/agents", {
        type: "trigger",
        config: {
          wallet: s().owner.address,
          inputToken: "JUP",
          outputToken: "USDC",
          amount: AMOUNT,
          triggerCondition: "below",
          triggerPriceUsd: 0.45,
          expiresAt: new Date(Date.now() + 600_000).toISOString(),
        },
      })
    ).agentId as string;
    await s().owners.approve(agentId, AMOUNT, s().owner);
    await until(
      async () => ((await agent(agentId)).status === "active" ? true : undefined),
      20_000,
      "the order active",
    );
    return agentId;
  }

  beforeAll(async () => {
    jupiter = await startFakeJupiter();
    jupiter.prices.set(USDC, priced(1));
    jupiter.prices.set(JUP, priced(0.5));
    hermes = await startFakeHermes();
    pythLive(0.5);
    swapChain = await startSwapOnChain({
      env: {
        ...fastScheduleEnv(3_000),
        JUPITER_API_URL: jupiter.url,
        TRIGGER_PRICE_SOURCES: "prices,pyth",
        PYTH_HERMES_URL: hermes.url,
        PYTH_PRICE_FEEDS: `JUP:0x${JUP_FEED}`,
        PRICE_TTL_MS: String(TTL_MS),
        PRICE_MAX_STALE_MS: "300000",
        PRICE_WATCH_INTERVAL_MS: "100",
        TRIGGER_HOLD_MS: String(HOLD_MS),
        TRIGGER_CONFIRMATIONS: "2",
        TRIGGER_REFRESH_MS: "200",
        SCHEDULER_RETRY_MAX_MS: "200",
        SCHEDULER_MAX_ATTEMPTS: "2",
      },
      funds: [
        [JUP, 1_000_000_000n],
        [USDC, 0n],
      ],
      jupiter: { pools: [{ mintA: USDC, mintB: JUP, reserveA: RESERVE_USDC, reserveB: RESERVE_JUP }] },
    });
    const owner = s().owner.address;
    ownerJup = await tokenAccountOf(owner, JUP);
  });

  afterAll(async () => {
    await swapChain?.stop();
    await jupiter?.close();
    await hermes?.close();
  });

  it("fires on the median of the two: not while only Pyth is below the stop, then when their mean is", async () => {
    pythLive(0.5);
    const agentId = await stopLoss();
    const jupBefore = await s().owners.balance(ownerJup);
    // Pyth at 0.42 is below the stop, Jupiter at 0.5 is not: the reference is 0.46, above it.
    pythLive(0.42);
    await looks(3 + Math.ceil((2 * HOLD_MS) / 100));
    const watching = await agent(agentId);
    expect(watching.status).toBe("active");
    expect((watching.trigger as Json).lastPriceUsd).toBeCloseTo(0.46, 9);
    expect(await runs(agentId)).toEqual([]);

    // Pyth at 0.38: the reference is (0.5 + 0.38) / 2 = 0.44, below the stop. It fires on that.
    pythLive(0.38);
    const done = await settled(agentId, "completed");
    const [run, ...more] = await runs(agentId);
    expect(more).toEqual([]);
    expect(run?.outcome).toBe("succeeded");
    const result = run?.result as Json;
    expect(result).toMatchObject({ kind: "trigger", leg: "single", triggerPriceUsd: 0.45 });
    expect(result.referencePriceUsd).toBeCloseTo(0.44, 9);
    expect(((done.trigger as Json).firing as Json).referencePriceUsd).toBeCloseTo(0.44, 9);
    expect(await s().owners.balance(ownerJup)).toBe(jupBefore - AMOUNT_UNITS);
  });

  it("a Pyth price with a stale publish_time does not count: the reference is Jupiter's alone until Pyth publishes again", async () => {
    pythLive(0.5);
    const agentId = await stopLoss();
    const jupBefore = await s().owners.balance(ownerJup);
    // Hermes answers at once, but with a price Pyth published a minute ago: were it counted, the
    // reference would be (0.5 + 0.3) / 2 = 0.4 and the stop would fire.
    pythStale(0.3);
    await looks(3 + Math.ceil((2 * HOLD_MS) / 100));
    const watching = await agent(agentId);
    expect(watching.status).toBe("active");
    expect((watching.trigger as Json).lastPriceUsd).toBe(0.5);
    expect(await runs(agentId)).toEqual([]);
    expect(await s().owners.balance(ownerJup)).toBe(jupBefore);

    // Pyth publishes 0.3 again, fresh: the reference is 0.4, and the stop fires on it.
    pythLive(0.3);
    await settled(agentId, "completed");
    const [run] = await runs(agentId);
    expect((run as Json).result).toMatchObject({ referencePriceUsd: expect.closeTo(0.4, 9) });
    expect(await s().owners.balance(ownerJup)).toBe(jupBefore - AMOUNT_UNITS);
  });
});

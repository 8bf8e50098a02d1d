/**
 * Trigger orders as an owner uses them, on the embedded local chain: prices from a Jupiter-shaped
 * Price API the test moves (support/fake-jupiter.ts), fills through the Jupiter-shaped Swap API on
 * a real USDC/JUP pool of the chain (0.5 USDC per JUP). Each order is created over REST, approved
 * by the wallet's own key, and watched by the service: a one-poll spike fires nothing, a gap far
 * through a stop fires and fills, a take-profit fires, an OCO fires one leg and drops the other, a
 * route worse than the owner's worst price is never signed, a stale price fires nothing, and an
 * order that never fires expires with nothing moved. The chain's balances say what moved.
 */
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import type { Address } from "@solana/kit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AgentService } from "../gen/agent/v1/agent_pb.ts";
import { fastScheduleEnv } from "./support/agent-on-chain.ts";
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

const TTL_MS = 300;
const HOLD_MS = 300;

describe("trigger orders on the embedded chain", () => {
  let prices: FakeJupiter;
  let swapChain: SwapOnChain | undefined;
  let ownerJup: Address;
  let ownerUsdc: Address;
  const events: Json[] = [];
  const abort = new AbortController();
  const setJup = (usd: number) => prices.prices.set(JUP, priced(usd));
  const s = () => swapChain as SwapOnChain;
  const ok = (method: string, path: string, body?: object) => s().owners.ok(method, path, body);
  const balance = (account: Address) => s().owners.balance(account);
  const expiresIn = (ms: number) => new Date(Date.now() + ms).toISOString();
  /** The types of the agent's events once the stream has shown `last`. */
  const eventsOf = (agentId: string, last: string) =>
    until(
      async () => {
        const types = events.filter((e) => e.agentId === agentId).map((e) => e.type);
        return types.includes(last) ? types : undefined;
      },
      10_000,
      `the event ${last}`,
    );

  /** A trigger order selling AMOUNT JUP for USDC, approved by the wallet and active. */
  async function order(config: Json): Promise<string> {
    const agentId = (
      await ok("POST", "/v1/agents", {
        type: "trigger",
        config: {
          wallet: s().owner.address,
          inputToken: "JUP",
          outputToken: "USDC",
          amount: AMOUNT,
          expiresAt: expiresIn(600_000),
          ...config,
        },
      })
    ).agentId as string;
    const pending = await ok("GET", `/v1/agents/${agentId}`);
    expect(pending.status).toBe("pending");
    // PrepareApproval asks for exactly the order's amount.
    expect(pending.pendingReason).toMatch(/for at least 20 JUP/);
    await s().owners.approve(agentId, AMOUNT, s().owner);
    await until(
      async () => ((await ok("GET", `/v1/agents/${agentId}`)).status === "active" ? true : undefined),
      20_000,
      "the order active",
    );
    return agentId;
  }

  const agent = (agentId: string) => ok("GET", `/v1/agents/${agentId}`);
  const runs = (agentId: string) => s().owners.runsOf(agentId);
  const settled = (agentId: string, status: string) =>
    until(
      async () => {
        const a = await agent(agentId);
        return a.status === status ? a : undefined;
      },
      20_000,
      `the order ${status}`,
    );
  /** Waits until `n` more price requests for JUP were answered: `n` fresh observations at least. */
  const observations = async (n: number) => {
    const start = prices.priceRequestsFor([JUP]).length;
    await until(
      async () => (prices.priceRequestsFor([JUP]).length >= start + n ? true : undefined),
      10_000,
      `${n} price requests`,
    );
  };

  beforeAll(async () => {
    prices = await startFakeJupiter();
    prices.prices.set(USDC, priced(1));
    prices.prices.set(JUP, priced(0.5));
    swapChain = await startSwapOnChain({
      env: {
        ...fastScheduleEnv(3_000),
        JUPITER_API_URL: prices.url,
        PRICE_TTL_MS: String(TTL_MS),
        PRICE_MAX_STALE_MS: "300000",
        PRICE_WATCH_INTERVAL_MS: "50",
        TRIGGER_HOLD_MS: String(HOLD_MS),
        TRIGGER_CONFIRMATIONS: "2",
        TRIGGER_REFRESH_MS: "200",
        JUPITER_BREAKER_OPEN_MS: "200",
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
    ownerUsdc = await tokenAccountOf(owner, USDC);
    const client = createClient(AgentService, createGrpcTransport({ baseUrl: s().server.baseUrl }));
    void (async () => {
      for await (const message of client.watchAgentEvents({}, { signal: abort.signal })) {
        const e = message.data;
        if (e !== undefined)
          events.push({
            type: e.type,
            agentId: e.agentId,
            leg: e.trigger?.leg,
            reference: e.trigger?.referencePriceUsd,
          });
      }
    })().catch(() => {});
  });

  afterAll(async () => {
    abort.abort();
    await swapChain?.stop();
    await prices?.close();
  });

  it("refuses a mistaken order over REST with invalid_argument, naming each field", async () => {
    const { status, json } = await s().owners.rest("POST", "/v1/agents", {
      type: "trigger",
      config: {
        wallet: s().owner.address,
        inputToken: "JUP",
        outputToken: "USDC",
        amount: AMOUNT,
        orderType: "oco",
        takeProfitPriceUsd: 0.4,
        stopLossPriceUsd: 0.6,
        triggerPriceUsd: 0.5,
        expiresAt: "2020-01-01T00:00:00Z",
      },
    });
    expect(status).toBe(400);
    expect(json.code).toBe("invalid_argument");
    expect(JSON.stringify(json)).toMatch(/config\.expiresAt.*must be in the future/);
  });

  it("a stop-loss: a one-poll spike fires nothing; a gap far through it fires once and fills, no worse than the reference less its slippage", async () => {
    setJup(0.5);
    const agentId = await order({ triggerCondition: "below", triggerPriceUsd: 0.45 });
    const jupBefore = await balance(ownerJup);
    const usdcBefore = await balance(ownerUsdc);
    // One observation of 0.40, then 0.5 again: the condition held once, not twice.
    await observations(2);
    setJup(0.4);
    await observations(1);
    setJup(0.5);
    await observations(4);
    const watching = await agent(agentId);
    expect(watching.status).toBe("active");
    // GetAgent shows the last reference price this replica saw.
    expect((watching.trigger as Json).lastPriceUsd).toBe(0.5);
    expect(await runs(agentId)).toEqual([]);
    expect(await balance(ownerJup)).toBe(jupBefore);

    // A gap: from 0.5 straight to 0.30, far below the stop. It fires, and fills at market.
    setJup(0.3);
    const done = await settled(agentId, "completed");
    const [run, ...more] = await runs(agentId);
    expect(more).toEqual([]);
    expect(run?.outcome).toBe("succeeded");
    const result = run?.result as Json;
    expect(result).toMatchObject({
      kind: "trigger",
      leg: "single",
      triggerPriceUsd: 0.45,
      referencePriceUsd: 0.3,
    });
    // Its worst price: the reference it fired on, less the stop's default 300 bps.
    expect(result.worstPriceUsd).toBeCloseTo(0.3 * 0.97, 9);
    const out = BigInt(result.outAmountUnits as string);
    expect(Number(out) / 1e6 / AMOUNT).toBeGreaterThanOrEqual(0.3 * 0.97);
    expect(await balance(ownerJup)).toBe(jupBefore - AMOUNT_UNITS);
    expect(await balance(ownerUsdc)).toBe(usdcBefore + out);
    const trigger = done.trigger as Json;
    expect(trigger.firing).toMatchObject({ leg: "single", referencePriceUsd: 0.3 });
    expect((trigger.firing as Json).observations).toHaveLength(2);
    expect(await eventsOf(agentId, "agent.completed")).toEqual([
      "agent.created",
      "agent.activated",
      "trigger.fired",
      "run.started",
      "run.succeeded",
      "agent.completed",
    ]);
    expect(events.filter((e) => e.agentId === agentId && e.type === "trigger.fired")).toEqual([
      { type: "trigger.fired", agentId, leg: "single", reference: 0.3 },
    ]);
  });

  it("a take-profit above its level fires once and fills", async () => {
    setJup(0.4);
    const agentId = await order({ triggerCondition: "above", triggerPriceUsd: 0.45 });
    const jupBefore = await balance(ownerJup);
    await observations(2);
    expect((await agent(agentId)).status).toBe("active");
    setJup(0.46);
    await settled(agentId, "completed");
    const [run, ...more] = await runs(agentId);
    expect(more).toEqual([]);
    // A take-profit waits for a better price: its worst is the level less 50 bps, not the reference.
    expect(run?.result).toMatchObject({ kind: "trigger", leg: "single", referencePriceUsd: 0.46 });
    expect((run as Json).result).toMatchObject({ worstPriceUsd: expect.closeTo(0.45 * 0.995, 9) });
    expect(await balance(ownerJup)).toBe(jupBefore - AMOUNT_UNITS);
  });

  it("OCO: the stop-loss leg fires and fills, the take-profit leg is cancelled", async () => {
    setJup(0.5);
    const agentId = await order({ orderType: "oco", takeProfitPriceUsd: 0.6, stopLossPriceUsd: 0.4 });
    const jupBefore = await balance(ownerJup);
    setJup(0.38);
    await settled(agentId, "completed");
    const fired = (await runs(agentId)).map((r) => (r.result as Json).leg);
    expect(fired).toEqual(["stop_loss"]);
    expect(await balance(ownerJup)).toBe(jupBefore - AMOUNT_UNITS);
    // The other leg is gone: a price above the take-profit moves nothing more.
    setJup(0.7);
    await new Promise((resolve) => setTimeout(resolve, 4 * (TTL_MS + HOLD_MS)));
    expect(await runs(agentId)).toHaveLength(1);
    expect(await balance(ownerJup)).toBe(jupBefore - AMOUNT_UNITS);
  });

  it("a route worse than the owner's worst price is not signed: the order waits, active; paused, it fires nothing", async () => {
    setJup(0.5);
    // A take-profit at 0.55: the pool pays 0.5, below 0.55 less 50 bps.
    const agentId = await order({ triggerCondition: "above", triggerPriceUsd: 0.55 });
    const jupBefore = await balance(ownerJup);
    setJup(0.56);
    const skipped = await until(
      async () => (await runs(agentId)).find((r) => r.outcome === "skipped"),
      15_000,
      "a firing whose route was refused",
    );
    expect((skipped.result as Json).reason).toMatch(/worse than the order's worst price/);
    expect(await balance(ownerJup)).toBe(jupBefore);
    await until(
      async () => ((await agent(agentId)).status === "active" ? true : undefined),
      5_000,
      "the order watching again",
    );
    await ok("POST", `/v1/agents/${agentId}:pause`);
    const count = (await runs(agentId)).length;
    await new Promise((resolve) => setTimeout(resolve, 4 * (TTL_MS + HOLD_MS)));
    expect((await runs(agentId)).length).toBe(count);
    expect((await agent(agentId)).status).toBe("paused");
    expect(await balance(ownerJup)).toBe(jupBefore);
    await ok("DELETE", `/v1/agents/${agentId}`);
  });

  it("a stale or absent price fires nothing, and the order's notice says why", async () => {
    setJup(0.5);
    const agentId = await order({ triggerCondition: "below", triggerPriceUsd: 0.45 });
    const jupBefore = await balance(ownerJup);
    prices.fault = { kind: "status", status: 503, path: "/price/" };
    setJup(0.3);
    await new Promise((resolve) => setTimeout(resolve, TTL_MS * 4));
    const waiting = await agent(agentId);
    expect(waiting.status).toBe("active");
    expect(waiting.notice).toMatch(/no fresh price of JUP can be had/);
    expect(await runs(agentId)).toEqual([]);
    expect(await balance(ownerJup)).toBe(jupBefore);
    prices.fault = undefined;
    await settled(agentId, "completed");
    expect(await balance(ownerJup)).toBe(jupBefore - AMOUNT_UNITS);
  });

  it("an order that never fires expires at its expiresAt, with nothing moved", async () => {
    setJup(0.5);
    const agentId = await order({
      triggerCondition: "below",
      triggerPriceUsd: 0.1,
      expiresAt: expiresIn(8_000),
    });
    const jupBefore = await balance(ownerJup);
    const expired = await settled(agentId, "expired");
    expect(expired.nextRunAt).toBeUndefined();
    expect(await balance(ownerJup)).toBe(jupBefore);
    const [run] = await runs(agentId);
    expect(run?.result).toMatchObject({ kind: "trigger", expired: true });
    expect(await eventsOf(agentId, "agent.expired")).not.toContain("trigger.fired");
    const { status } = await s().owners.rest("POST", `/v1/agents/${agentId}:resume`);
    expect(status).toBe(400);
  });
});

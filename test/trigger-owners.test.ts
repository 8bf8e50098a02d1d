/**
 * Trigger orders between owners, and on a hostile Swap API (AUTH_MODE=apikey, the embedded chain,
 * a Jupiter-shaped Price API the test moves and the Jupiter-shaped Swap API on a real pool).
 *
 * - A second owner reaches nothing of another's order: not the order, its runs, its events or its
 *   wallet's approval. Her own order on the same wallet waits for an approval the wallet never
 *   gave, and the price that fills the first owner's order moves nothing for her.
 * - A Swap API answer that would make the executor pay a stranger is refused before anything is
 *   signed when the order fires: the executor's lamports, the wallet's tokens and its allowance are
 *   unchanged, and the order watches again; with honest answers back it fills once.
 */
import { randomBytes } from "node:crypto";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import type { Address } from "@solana/kit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AgentService } from "../gen/agent/v1/agent_pb.ts";
import { fastScheduleEnv } from "./support/agent-on-chain.ts";
import { type FakeJupiter, startFakeJupiter } from "./support/fake-jupiter.ts";
import { createAnswerSwitch, HOSTILE_ROUTES } from "./support/hostile-swap-routes.ts";
import { type SwapOnChain, startSwapOnChain } from "./support/swap-on-chain.ts";
import { createTransferOwner, type Json, until } from "./support/transfer-owner.ts";
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

const ADMIN_KEY = randomBytes(24).toString("base64url");
type Owner = ReturnType<typeof createTransferOwner>;

describe("trigger orders between owners, and on a hostile Swap API", () => {
  let prices: FakeJupiter;
  let swapChain: SwapOnChain | undefined;
  const answers = createAnswerSwitch();
  const keys: Record<string, string> = {};
  const owners: Record<string, Owner> = {};
  /** Every event mallory's own stream shows. */
  const malloryEvents: Json[] = [];
  const abort = new AbortController();
  const s = () => swapChain as SwapOnChain;
  const alice = () => owners.alice as Owner;
  const mallory = () => owners.mallory as Owner;
  const setJup = (usd: number) => prices.prices.set(JUP, priced(usd));
  const stopLoss = (owner: Owner, wallet: string) =>
    owner
      .ok("POST", "/v1/agents", {
        type: "trigger",
        config: {
          wallet,
          inputToken: "JUP",
          outputToken: "USDC",
          amount: AMOUNT,
          triggerCondition: "below",
          triggerPriceUsd: 0.45,
          expiresAt: new Date(Date.now() + 600_000).toISOString(),
        },
      })
      .then((created) => created.agentId as string);
  const statusOf = async (owner: Owner, agentId: string) =>
    (await owner.ok("GET", `/v1/agents/${agentId}`)).status;
  const becomes = (owner: Owner, agentId: string, status: string) =>
    until(
      async () => ((await statusOf(owner, agentId)) === status ? true : undefined),
      20_000,
      `the order ${status}`,
    );

  beforeAll(async () => {
    prices = await startFakeJupiter();
    prices.prices.set(USDC, priced(1));
    setJup(0.5);
    swapChain = await startSwapOnChain({
      env: {
        ...fastScheduleEnv(3_000),
        AUTH_MODE: "apikey",
        ADMIN_API_KEY: ADMIN_KEY,
        JUPITER_API_URL: prices.url,
        PRICE_TTL_MS: "300",
        PRICE_MAX_STALE_MS: "300000",
        PRICE_WATCH_INTERVAL_MS: "50",
        TRIGGER_HOLD_MS: "300",
        TRIGGER_REFRESH_MS: "200",
        SCHEDULER_RETRY_MAX_MS: "200",
        SCHEDULER_MAX_ATTEMPTS: "2",
        // A refused firing is a failed run; the order must survive one to fill once answers are honest.
        SCHEDULER_MAX_CONSECUTIVE_FAILURES: "5",
      },
      funds: [
        [JUP, 1_000_000_000n],
        [USDC, 0n],
      ],
      jupiter: {
        pools: [{ mintA: USDC, mintB: JUP, reserveA: RESERVE_USDC, reserveB: RESERVE_JUP }],
        mutate: answers.mutate,
      },
    });
    const { server, chain } = s();
    const admin = createTransferOwner({ baseUrl: server.baseUrl, chain, key: ADMIN_KEY });
    for (const name of ["alice", "mallory"]) {
      const created = await admin.ok("POST", "/v1/apikeys", {
        owner: name,
        scopes: ["agents:read", "agents:write"],
      });
      keys[name] = created.key as string;
      owners[name] = createTransferOwner({ baseUrl: server.baseUrl, chain, key: keys[name] });
    }
    const client = createClient(AgentService, createGrpcTransport({ baseUrl: server.baseUrl }));
    void (async () => {
      const headers = { authorization: `Bearer ${keys.mallory}` };
      for await (const message of client.watchAgentEvents({}, { signal: abort.signal, headers })) {
        if (message.data !== undefined)
          malloryEvents.push({ type: message.data.type, agentId: message.data.agentId });
      }
    })().catch(() => {});
  });

  afterAll(async () => {
    abort.abort();
    await swapChain?.stop();
    await prices?.close();
  });

  it("a second owner reaches nothing of another's order, and her own on the same wallet moves nothing", async () => {
    setJup(0.5);
    const wallet = s().owner;
    const walletJup = await tokenAccountOf(wallet.address, JUP);
    const aliceOrder = await stopLoss(alice(), wallet.address);
    const aliceApproval = await alice().approve(aliceOrder, AMOUNT, wallet);
    await becomes(alice(), aliceOrder, "active");

    // Alice's order is unknown to mallory, whatever she asks of it.
    for (const [method, path] of [
      ["GET", `/v1/agents/${aliceOrder}`],
      ["GET", `/v1/agents/${aliceOrder}/runs`],
      ["POST", `/v1/agents/${aliceOrder}:pause`],
      ["POST", `/v1/agents/${aliceOrder}:prepareApproval`],
    ] as const) {
      const { status, json } = await mallory().rest(method, path, method === "GET" ? undefined : {});
      expect([method, path, status, json.code]).toEqual([method, path, 404, "not_found"]);
    }
    // DeleteAgent is idempotent (an unknown agent is already gone): it answers, and deletes nothing of alice's.
    expect((await mallory().rest("DELETE", `/v1/agents/${aliceOrder}`)).json).toMatchObject({
      success: true,
    });
    expect(await statusOf(alice(), aliceOrder)).toBe("active");

    // Her own order on alice's wallet names her own delegate, which the wallet never approved.
    const malloryOrder = await stopLoss(mallory(), wallet.address);
    const malloryPlan = await mallory().ok("POST", `/v1/agents/${malloryOrder}:prepareApproval`, {
      allowance: AMOUNT,
    });
    expect(malloryPlan.delegate).not.toBe(aliceApproval.delegate);

    const before = await s().owners.balance(walletJup);
    setJup(0.3);
    await becomes(alice(), aliceOrder, "completed");
    // One fill, alice's: the wallet gave exactly one amount.
    expect(await s().owners.balance(walletJup)).toBe(before - AMOUNT_UNITS);
    const waiting = await mallory().ok("GET", `/v1/agents/${malloryOrder}`);
    expect(waiting.status).toBe("pending");
    expect(await mallory().runsOf(malloryOrder)).toEqual([]);
    expect(await alice().runsOf(aliceOrder)).toHaveLength(1);
    // Her stream shows her own order's events, none of alice's (trigger.fired included).
    await until(
      async () => (malloryEvents.some((e) => e.agentId === malloryOrder) ? true : undefined),
      10_000,
      "mallory's own event",
    );
    expect(malloryEvents.filter((e) => e.agentId === aliceOrder)).toEqual([]);
    await mallory().ok("DELETE", `/v1/agents/${malloryOrder}`);
  });

  it("a fired order on a Swap API answer that would make the executor pay a stranger signs nothing, watches again, and fills once answers are honest", async () => {
    setJup(0.5);
    const wallet = s().owner;
    const walletJup = await tokenAccountOf(wallet.address, JUP);
    const executor = (await alice().ok("GET", "/v1/executor")).address as Address;
    const lamports = async () => (await s().chain.rpc.getBalance(executor).send()).value;
    const order = await stopLoss(alice(), wallet.address);
    // Twice the amount: the same approval as the first case's would be the same transaction.
    const approval = await alice().approve(order, 2 * AMOUNT, wallet);
    await becomes(alice(), order, "active");
    answers.target(executor);
    answers.use(HOSTILE_ROUTES["system-transfer-from-executor"]);
    const jupBefore = await s().owners.balance(walletJup);
    const executorBefore = await lamports();

    setJup(0.3);
    const refused = await until(
      async () => (await alice().runsOf(order)).find((r) => r.outcome === "failed"),
      20_000,
      "the firing's run refused",
    );
    answers.use(undefined);
    expect(refused.error).toMatch(/calls the System program/);
    // Nothing was signed for the refused run: the wallet, its allowance and the executor are as they were.
    expect(await s().owners.balance(walletJup)).toBe(jupBefore);
    expect(await s().owners.tokenAccount(walletJup)).toMatchObject({
      delegate: approval.delegate,
      delegatedAmount: { amount: String(2n * AMOUNT_UNITS) },
    });
    expect(await lamports()).toBe(executorBefore);

    // Honest answers again: the order, still watching, fires again and fills exactly once.
    await becomes(alice(), order, "completed");
    const runs = await alice().runsOf(order);
    expect(runs.filter((r) => r.outcome === "succeeded")).toHaveLength(1);
    expect(await s().owners.balance(walletJup)).toBe(jupBefore - AMOUNT_UNITS);
  });
});

/**
 * Prices on the embedded chain (no JUPITER_API_URL) come from the chain's own local pools: a pooled
 * token's price is its pool's mid price, read from the chain's vaults, so moving a pool moves it;
 * stablecoins stay 1. A developer moves a price with the cheatcode surfnet_setTokenPrice (or
 * `npm run move-price`, scripts/move-price.ts), which rebalances every pool of the token; the
 * service's next fresh read shows it, a swap after it passes the deviation check at the new price,
 * and with cheatcodes off it is refused. Real server, real chain.
 */
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { fileURLToPath } from "node:url";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { type Address, getAddressDecoder } from "@solana/kit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TokenService } from "../gen/token/v1/token_pb.ts";
import { UnavailableError } from "../src/domain/errors.ts";
import { createPoolPriceSource, type LocalPool, localPools, poolPricing } from "../src/local-chain/index.ts";
import { loadCatalog } from "../src/token/catalog.ts";
import { createCatalogPriceSource } from "../src/token/catalog-price-source.ts";
import {
  type AgentOnChain,
  fastScheduleEnv,
  startAgentOnChain,
  stopAgentOnChain,
} from "./support/agent-on-chain.ts";
import { catalogToken } from "./support/catalog-prices.ts";
import { useCleanups } from "./support/cleanups.ts";
import { type RunningServer, startServer } from "./support/start-server.ts";
import { type Json, until } from "./support/transfer-owner.ts";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const catalog = loadCatalog();
const SOL = catalogToken("SOL");
const USDC = catalogToken("USDC");
const USDT = catalogToken("USDT");
const JUP = catalogToken("JUP");
const SLOT_MS = 3_000;
const cleanup = useCleanups();

const pricesClient = (server: RunningServer) =>
  createClient(TokenService, createConnectTransport({ baseUrl: server.baseUrl, httpVersion: "1.1" }));

/** The chain's answer to surfnet_setTokenPrice: its result's value, or its error. */
async function setTokenPrice(
  chain: AgentOnChain["chain"],
  mint: string,
  price: unknown,
): Promise<{ value?: Json; error?: { code: number; message: string } }> {
  const answer = await chain.raw("surfnet_setTokenPrice", [mint, price]);
  if ("error" in answer) return { error: answer.error as { code: number; message: string } };
  return { value: (answer.result as { value: Json }).value };
}

/** `npm run move-price -- ...args` against the chain at `rpcUrl`. */
function movePrice(rpcUrl: string, ...args: string[]) {
  const run = spawnSync(process.execPath, ["scripts/move-price.ts", ...args], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? "", RPC_URL: rpcUrl },
    encoding: "utf8",
    timeout: 20_000,
  });
  return { status: run.status, stdout: run.stdout, stderr: run.stderr };
}

/** The pool's token balance of a vault, as the chain holds it. */
async function vaultBalance(chain: AgentOnChain["chain"], vault: string): Promise<bigint> {
  const { value } = await chain.rpc
    .getTokenAccountBalance(vault as Address, { commitment: "processed" })
    .send();
  return BigInt(value.amount);
}

describe("prices from the embedded chain's local pools", () => {
  let agentChain: AgentOnChain;
  let server: RunningServer;
  let pools: LocalPool[];

  beforeAll(async () => {
    agentChain = await startAgentOnChain({ ...fastScheduleEnv(SLOT_MS), SCHEDULER_RETRY_MAX_MS: "200" }, [
      [USDC.mint as Address, 100_000_000n],
    ]);
    server = agentChain.server;
    pools = await localPools(
      catalog,
      server.localChain?.keys as NonNullable<RunningServer["localChain"]>["keys"],
    );
  });
  afterAll(async () => {
    await stopAgentOnChain("memory", agentChain?.server);
  });

  /**
   * Waits until the price source's reading is too old for anyone (it is fresh for a chain slot,
   * and given to displays for one more while it is read again).
   */
  const nextReading = () =>
    new Promise((resolve) => setTimeout(resolve, 2 * server.context.config.solana.local.slotMs + 20));

  it("prices pooled tokens from their pools, read from the chain, and keeps stablecoins at 1", async () => {
    const started = Date.now();
    const { data } = await pricesClient(server).getTokenPrices({});
    expect(data.map((p) => p.mint)).toEqual(catalog.tokens.map((t) => t.mint));
    for (const entry of data) {
      const token = catalog.tokens.find((t) => t.mint === entry.mint);
      // The pools were seeded at the catalog's prices, and their mid price reads them back exactly.
      expect([entry.symbol, entry.price, entry.change24h, entry.unpriced]).toEqual([
        token?.symbol,
        token?.price,
        token?.change24h,
        false,
      ]);
      if (entry.mint === USDC.mint || entry.mint === USDT.mint) {
        expect(entry.slot).toBe(0n);
        expect(entry.asOf && timestampDate(entry.asOf).toISOString()).toBe(
          new Date(catalog.asOf).toISOString(),
        );
      } else {
        // Read from the chain: at one of its slots, a moment ago.
        expect(entry.slot).toBeGreaterThan(0n);
        expect(entry.asOf && Number(timestampDate(entry.asOf))).toBeGreaterThanOrEqual(started - 5_000);
      }
    }
    // The mid price of the SOL/USDC pool as the chain's vaults hold it.
    const pool = pools.find((p) => p.name === "SOL/USDC") as LocalPool;
    const mid =
      Number(await vaultBalance(agentChain.chain, pool.vaultB)) /
      1e6 /
      (Number(await vaultBalance(agentChain.chain, pool.vaultA)) / 1e9);
    expect(data.find((p) => p.mint === SOL.mint)?.price).toBe(Number(mid.toPrecision(8)));
  });

  it("surfnet_setTokenPrice moves a token's price in every pool of it, and the next fresh read shows it", async () => {
    const client = pricesClient(server);
    const before = (await client.getTokenPrices({})).data;
    const moved = await setTokenPrice(agentChain.chain, SOL.mint, 180);
    expect(moved.error).toBeUndefined();
    expect(moved.value?.price).toBe(180);
    // SOL/USDC and the 14 pools of the other tokens against SOL.
    expect(((moved.value?.pools ?? []) as Json[]).map((p) => p.pool)).toEqual(
      pools.filter((p) => p.mintA === SOL.mint || p.mintB === SOL.mint).map((p) => p.name),
    );
    await nextReading();
    const [fresh] = await server.context.prices.pricesOf([SOL.mint], { fresh: true });
    expect(fresh?.price).toBe(180);
    const after = (await client.getTokenPrices({})).data;
    const sol = after.find((p) => p.mint === SOL.mint);
    expect(sol?.price).toBe(180);
    expect(sol?.slot).toBeGreaterThan(before.find((p) => p.mint === SOL.mint)?.slot ?? 0n);
    // Measured from the catalog's price a day before its snapshot.
    expect(sol?.change24h).toBe(
      Number(((180 / (SOL.price / (1 + SOL.change24h / 100)) - 1) * 100).toFixed(2)),
    );
    // No other token moved: same price, and the same slot (a price stream stays quiet).
    for (const entry of after.filter((p) => p.mint !== SOL.mint)) {
      const was = before.find((p) => p.mint === entry.mint);
      expect([entry.mint, entry.price, entry.slot]).toEqual([was?.mint, was?.price, was?.slot]);
    }
    // Every pool against SOL now agrees with the tokens' dollar prices at SOL's new price.
    for (const pool of pools.filter((p) => p.mintB === SOL.mint)) {
      const token = catalog.tokens.find((t) => t.mint === pool.mintA);
      const mid =
        (Number(await vaultBalance(agentChain.chain, pool.vaultB)) /
          1e9 /
          (Number(await vaultBalance(agentChain.chain, pool.vaultA)) / 10 ** pool.decimalsA)) *
        180;
      expect(Math.abs(mid / (token?.price ?? 0) - 1)).toBeLessThan(1e-6);
    }
  });

  it("npm run move-price moves a price by symbol; the mint's supply follows its vaults", async () => {
    const jupPools = pools.filter((p) => p.mintA === JUP.mint);
    const supply = async () =>
      BigInt((await agentChain.chain.rpc.getTokenSupply(JUP.mint as Address).send()).value.amount);
    const held = async () => {
      let sum = 0n;
      for (const pool of jupPools) sum += await vaultBalance(agentChain.chain, pool.vaultA);
      return sum;
    };
    const [supplyBefore, heldBefore] = [await supply(), await held()];
    const run = movePrice(server.localChain?.url as string, "jup", "1.25");
    expect(run.stderr).toBe("");
    expect(run.status).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ mint: JUP.mint, symbol: "JUP", price: 1.25 });
    expect((await supply()) - supplyBefore).toBe((await held()) - heldBefore);
    await nextReading();
    const { data } = await pricesClient(server).getTokenPrices({ mints: [JUP.mint] });
    expect(data[0]?.price).toBe(1.25);
  });

  it("refuses stablecoins, tokens no pool holds, bad prices, and clusters", async () => {
    const refused = async (mint: string, price: unknown) =>
      (await setTokenPrice(agentChain.chain, mint, price)).error;
    expect(await refused(USDC.mint, 2)).toMatchObject({
      code: -32602,
      message: expect.stringMatching(/stablecoin/),
    });
    const unknown = getAddressDecoder().decode(randomBytes(32));
    expect(await refused(unknown, 2)).toMatchObject({
      code: -32602,
      message: expect.stringMatching(/no local pool/),
    });
    for (const bad of [0, -1, "abc", null, "1e999", [1]]) {
      expect(await refused(SOL.mint, bad)).toMatchObject({ code: -32602 });
    }
    expect(await refused(SOL.mint, 1e-30)).toMatchObject({
      code: -32602,
      message: expect.stringMatching(/out of range/),
    });
    const stable = movePrice(server.localChain?.url as string, "USDC", "2");
    expect([stable.status, stable.stderr]).toEqual([1, expect.stringMatching(/stablecoin/)]);
    const remote = movePrice("https://api.mainnet-beta.solana.com", "SOL", "2");
    expect([remote.status, remote.stderr]).toEqual([2, expect.stringMatching(/this machine only/)]);
  });

  it("a swap after a move passes the deviation check, at the moved price", async () => {
    const { owners, owner } = agentChain;
    // Dearer JUP: about 0.8 JUP per USDC, where the catalog says 1.145. Held to the catalog's price,
    // this route would be refused as more than SWAP_MAX_PRICE_DEVIATION_BPS worse.
    expect((await setTokenPrice(agentChain.chain, JUP.mint, 1.25)).error).toBeUndefined();
    const created = await owners.ok("POST", "/v1/agents", {
      type: "swap",
      config: {
        wallet: owner.address,
        inputToken: "USDC",
        outputToken: "JUP",
        amount: 1.5,
        schedule: "hourly",
        slippageBps: 100,
      },
    });
    const agentId = created.agentId as string;
    cleanup(() => owners.ok("POST", `/v1/agents/${agentId}:pause`).then(() => undefined));
    await owners.approve(agentId, 1.5, owner);
    const run = await until(
      async () =>
        (await owners.runsOf(agentId)).find((r) =>
          ["succeeded", "failed", "skipped"].includes(r.outcome as string),
        ),
      6 * SLOT_MS + 15_000,
      "the swap's first run",
    );
    expect([run.outcome, run.error]).toEqual(["succeeded", undefined]);
    const result = run.result as Json;
    const perUsdc = Number(result.outAmountUnits) / 1e6 / 1.5;
    // 1/1.25 JUP per USDC, less the pool's 0.3 % fee.
    expect(perUsdc).toBeGreaterThan(0.79);
    expect(perUsdc).toBeLessThan(0.8);
  }, 60_000);
});

describe("moving prices when the chain serves no cheatcodes", () => {
  it("refuses surfnet_setTokenPrice as an unknown method, and the script says why", async () => {
    const server = await startServer({ env: { LOCAL_SOLANA_CHEATCODES: "false" } });
    cleanup(() => server.close());
    const url = server.localChain?.url as string;
    const response = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "surfnet_setTokenPrice",
        params: [SOL.mint, 180],
      }),
    });
    expect(((await response.json()) as Json).error).toMatchObject({ code: -32601 });
    const run = movePrice(url, "SOL", "180");
    expect([run.status, run.stderr]).toEqual([1, expect.stringMatching(/serves no cheatcodes/)]);
    // Prices still come from the pools, which nothing moved.
    const [sol] = (await pricesClient(server).getTokenPrices({ mints: [SOL.mint] })).data;
    expect([sol?.price, (sol?.slot ?? 0n) > 0n]).toEqual([SOL.price, true]);
  });
});

describe("CATALOG_PRICE_TICK_MS on the embedded chain", () => {
  it("prices every token by the catalog's walk, not the pools", async () => {
    const server = await startServer({ env: { CATALOG_PRICE_TICK_MS: "3600000" } });
    cleanup(() => server.close());
    const response = await fetch(server.localChain?.url as string, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "surfnet_setTokenPrice",
        params: [SOL.mint, 180],
      }),
    });
    expect(((await response.json()) as Json).error).toBeUndefined();
    await new Promise((resolve) => setTimeout(resolve, server.context.config.solana.local.slotMs + 20));
    const [sol] = (await pricesClient(server).getTokenPrices({ mints: [SOL.mint] })).data;
    expect([sol?.price, sol?.slot]).toEqual([SOL.price, 0n]);
  });
});

describe("the pool price source", () => {
  const pool = {
    name: "SOL/USDC",
    key: { address: "pool" },
    mintA: SOL.mint,
    mintB: USDC.mint,
    decimalsA: 9,
    decimalsB: 6,
    vaultA: "vaultA",
    vaultB: "vaultB",
    reserveA: 0n,
    reserveB: 0n,
  } as unknown as LocalPool;
  const pricing = poolPricing([pool], new Set([USDC.mint]));
  const fallback = createCatalogPriceSource({ catalog });

  function source() {
    const state = { now: 1_000_000, slot: 10, sol: 1_000n * 10n ** 9n, fail: false, reads: 0 };
    const prices = createPoolPriceSource({
      pricing,
      fallback,
      catalog,
      ttlMs: 400,
      maxStaleMs: 5_000,
      now: () => state.now,
      async readVaults(vaults) {
        state.reads++;
        await new Promise((resolve) => setTimeout(resolve, 5));
        if (state.fail) throw new Error("the chain's worker is restarting");
        expect(vaults).toEqual(["vaultA", "vaultB"]);
        return { slot: state.slot, amounts: [state.sol, 150_000n * 10n ** 6n] };
      },
    });
    return { prices, state };
  }

  it("reads the pools once per ttl however many call, and keeps the slot while the price holds", async () => {
    const { prices, state } = source();
    const answers = await Promise.all(
      Array.from({ length: 50 }, () => prices.pricesOf([SOL.mint, USDC.mint])),
    );
    expect(state.reads).toBe(1);
    expect(answers.every((a) => a[0]?.price === 150 && a[0]?.slot === 10 && a[1]?.price === 1)).toBe(true);
    expect((await prices.pricesOf(prices.watchlist)).length).toBe(catalog.tokens.length);
    expect(state.reads).toBe(1);
    // Expired: a display is given the last reading at once while one read refreshes it.
    const first = state.now;
    state.now += 400;
    state.slot = 11;
    const [stale] = await prices.pricesOf([SOL.mint]);
    expect(Number(stale?.asOf)).toBe(first);
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(state.reads).toBe(2);
    // The new reading found the pool as it was: a new asOf, the slot it first read that price at.
    const [same] = await prices.pricesOf([SOL.mint]);
    expect([state.reads, same?.price, same?.slot, Number(same?.asOf)]).toEqual([2, 150, 10, state.now]);
    // A trade's fresh read waits for a new reading as soon as the last expires.
    state.now += 400;
    state.slot = 12;
    state.sol = 500n * 10n ** 9n;
    const [moved] = await prices.pricesOf([SOL.mint], { fresh: true });
    expect([state.reads, moved?.price, moved?.slot]).toEqual([3, 300, 12]);
    // Two ttl past it, a display waits too.
    state.now += 800;
    state.slot = 13;
    const [later] = await prices.pricesOf([SOL.mint]);
    expect([state.reads, later?.price, later?.slot, Number(later?.asOf)]).toEqual([4, 300, 12, state.now]);
    // A stablecoin or a mint no pool holds never waits on the chain.
    state.now += 800;
    await prices.pricesOf([USDC.mint, JUP.mint]);
    expect(state.reads).toBe(4);
    // An emptied pool gives no price: unpriced, not the catalog's.
    state.sol = 0n;
    const [empty] = await prices.pricesOf([SOL.mint], { fresh: true });
    expect([empty?.unpriced, empty?.price]).toEqual([true, 0]);
  });

  it("while the chain cannot be read: displays get the last reading up to maxStaleMs, then the catalog's, a trade neither", async () => {
    const { prices, state } = source();
    await prices.pricesOf([SOL.mint]);
    state.fail = true;
    state.now += 1_000;
    expect((await prices.pricesOf([SOL.mint]))[0]?.price).toBe(150);
    await expect(prices.pricesOf([SOL.mint], { fresh: true })).rejects.toThrow(UnavailableError);
    await expect(prices.pricesOf([SOL.mint], { fresh: true })).rejects.toThrow(
      /stale \(read 1 s ago, fresh for 0.4 s\) and could not be read again: the chain's worker is restarting/,
    );
    state.now += 5_000;
    const [snapshot] = await prices.pricesOf([SOL.mint]);
    expect([snapshot?.price, snapshot?.slot, snapshot?.asOf.toISOString()]).toEqual([
      SOL.price,
      0,
      new Date(catalog.asOf).toISOString(),
    ]);
    await expect(prices.pricesOf([SOL.mint], { fresh: true })).rejects.toThrow(UnavailableError);
    state.fail = false;
    expect((await prices.pricesOf([SOL.mint], { fresh: true }))[0]?.price).toBe(150);
  });

  it("with no reading yet and the chain away, displays get the catalog's prices and a trade is unavailable", async () => {
    const { prices, state } = source();
    state.fail = true;
    expect((await prices.pricesOf(prices.watchlist)).map((p) => p.price)).toEqual(
      catalog.tokens.map((t) => t.price),
    );
    await expect(prices.pricesOf([SOL.mint], { fresh: true })).rejects.toThrow(
      /the local pools' prices are unavailable: the chain's worker is restarting/,
    );
  });
});

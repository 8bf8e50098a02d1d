/**
 * A swap agent as its owner uses it, on the embedded local chain and a Jupiter-shaped /build server
 * of our own (test/support/jupiter-swap-server.ts) whose pool vaults are real token accounts, on
 * the memory store and on MongoDB (FerretDB): a funded wallet, an agent created over REST with a
 * price band, the PrepareApproval transaction signed by the wallet's own key, three slots that
 * swap for real (the chain's balances and transactions say so), one slot skipped when the pool's
 * price leaves the band, a revoke that fails the next runs and then the agent. Then each hostile
 * answer of the server, refused before anything is sent: the chain shows nothing moved, and the
 * run says why. Schedule time runs 1200 times faster: an hourly agent runs every 3 s.
 */
import { type Address, getBase58Encoder, type KeyPairSigner } from "@solana/kit";
import { findAssociatedTokenPda, getRevokeInstruction, TOKEN_PROGRAM_ADDRESS } from "@solana-program/token";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AgentService } from "../gen/agent/v1/agent_pb.ts";
import { DEFAULT_SWAP_PROGRAMS } from "../src/config.ts";
import { loadCatalog } from "../src/token/catalog.ts";
import {
  type AgentOnChain,
  agentStores,
  expectFailedAfterRevoke,
  expectLandedAsRecorded,
  fastScheduleEnv,
} from "./support/agent-on-chain.ts";
import { createProtocols, grpcJsProtocol } from "./support/callers.ts";
import type { ChainClient } from "./support/chain-client.ts";
import {
  type JupiterSwapServer,
  type JupiterSwapServerMode,
  SERVER_COMPUTE_UNIT_PRICE,
  SLIPPAGE_PROGRAM,
} from "./support/jupiter-swap-server.ts";
import type { RunningServer } from "./support/start-server.ts";
import { type SwapOnChain, startSwapOnChain } from "./support/swap-on-chain.ts";
import { type Json, until } from "./support/transfer-owner.ts";

const catalog = loadCatalog().tokens;
const USDC = catalog.find((t) => t.symbol === "USDC")?.mint as Address;
const JUP = catalog.find((t) => t.symbol === "JUP")?.mint as Address;
/** 1.5 USDC a run; the pool holds 1,000,000 USDC and 2,000,000 JUP: about 2 JUP per USDC. */
const AMOUNT = 1.5;
const AMOUNT_UNITS = 1_500_000n;
const RESERVE_USDC = 1_000_000_000_000n;
const RESERVE_JUP = 2_000_000_000_000n;
const SLOT_MS = 3_000;

const ENV = {
  ...fastScheduleEnv(SLOT_MS),
  SCHEDULER_RETRY_MAX_MS: "200",
  SCHEDULER_MAX_ATTEMPTS: "2",
  JUPITER_SWAP_TIMEOUT_MS: "1500",
  JUPITER_SWAP_MAX_RESPONSE_BYTES: "65536",
  // The slippage-6001 answer's program stands in for Jupiter's (deployed, not written by a cheatcode).
  SWAP_ALLOWED_PROGRAMS: [...DEFAULT_SWAP_PROGRAMS, SLIPPAGE_PROGRAM].join(","),
};

const STORES = agentStores("swap_test");

describe.concurrent.each(STORES)("a swap agent on the %s store swaps real tokens", (storeName, storeEnv) => {
  // The stores' suites run at once, each on a server, chain and clients of its own (they mostly
  // wait on schedule slots); within a store, the cases run in order, as they share that server.
  describe("in order", { concurrent: false }, () => {
    let server: RunningServer;
    let swapChain: SwapOnChain | undefined;
    let jupiter: JupiterSwapServer;
    let chain: ChainClient;
    let owner: KeyPairSigner;
    let ownerUsdc: Address;
    let ownerJup: Address;
    let owners: AgentOnChain["owners"];
    const ok = (method: string, path: string, body?: object) => owners.ok(method, path, body);
    const balance = (account: Address | string) => owners.balance(account as Address);
    const runsOf = (agentId: string) => owners.runsOf(agentId);
    const ata = async (wallet: string, mint: Address) =>
      (
        await findAssociatedTokenPda({ owner: wallet as Address, mint, tokenProgram: TOKEN_PROGRAM_ADDRESS })
      )[0];
    const createSwap = async (config: Json) =>
      (
        await ok("POST", "/v1/agents", {
          type: "swap",
          config: {
            wallet: owner.address,
            inputToken: "USDC",
            outputToken: "JUP",
            amount: AMOUNT,
            schedule: "hourly",
            slippageBps: 100,
            ...config,
          },
        })
      ).agentId as string;

    beforeAll(async () => {
      swapChain = await startSwapOnChain({
        env: { ...ENV, ...storeEnv() },
        funds: [[USDC, 100_000_000n]],
        jupiter: {
          pools: [{ mintA: USDC, mintB: JUP, reserveA: RESERVE_USDC, reserveB: RESERVE_JUP }],
          // The pool's vaults and mints come through a real lookup table, as Jupiter's routes do.
          lookupTable: true,
        },
        storeName,
      });
      ({ server, chain, owners, owner, jupiter } = swapChain);
      ownerUsdc = await ata(owner.address, USDC);
      ownerJup = await ata(owner.address, JUP);
    });

    afterAll(async () => {
      await swapChain?.stop();
    });

    it("approve, three swaps, one slot skipped out of band, revoke, failed", async () => {
      const executor = (await ok("GET", "/v1/executor")).address as string;
      const agentId = await createSwap({ minPrice: 1.5, maxPrice: 2.5 });
      const waiting = await ok("GET", `/v1/agents/${agentId}`);
      expect(waiting.status).toBe("pending");
      expect(waiting.pendingReason).toMatch(
        new RegExp(`wallet ${owner.address} must approve the delegate \\w+ for at least 1\\.5 USDC`),
      );
      // The wallet's own key signs the approval of its (owner, wallet) delegate, over the input token.
      const approval = await owners.approve(agentId, 15, owner);
      const delegate = approval.delegate as string;
      expect(delegate).not.toBe(executor);
      expect(approval).toMatchObject({
        owner: owner.address,
        mint: USDC,
        tokenAccount: ownerUsdc,
        allowance: "15000000",
      });

      // Three swaps, then the pool's price leaves the band and the next slot is skipped.
      await until(
        async () => {
          const runs = (await runsOf(agentId)).filter((r) => r.outcome === "succeeded");
          return runs.length >= 3 ? runs : undefined;
        },
        8 * SLOT_MS + 15_000,
        "three swaps succeeded",
      );
      const [pool] = jupiter.pools;
      // Half the JUP: about 1 JUP per USDC, below minPrice 1.5.
      await chain.raw("surfnet_setTokenAccount", [pool?.address, JUP, { amount: Number(RESERVE_JUP / 2n) }]);
      const skipped = await until(
        async () => (await runsOf(agentId)).find((r) => r.outcome === "skipped"),
        4 * SLOT_MS + 10_000,
        "a slot skipped out of band",
      );
      await ok("POST", `/v1/agents/${agentId}:pause`);
      expect(skipped.error).toBeUndefined();
      expect(skipped.result).toMatchObject({
        kind: "swap",
        skipped: true,
        minPrice: 1.5,
        maxPrice: 2.5,
        inputToken: "USDC",
        outputToken: "JUP",
        inAmountUnits: "1500000",
        routeLabels: ["Local CPMM"],
      });
      const quoted = (skipped.result as Json).quotedPrice as number;
      expect(quoted).toBeGreaterThan(0.9);
      expect(quoted).toBeLessThan(1.5);
      expect((skipped.result as Json).reason).toMatch(/below minPrice 1\.5/);
      const agent = await ok("GET", `/v1/agents/${agentId}`);
      expect(agent.status).toBe("paused");

      // Exact balances on chain: what each run says moved, and only that.
      const runs = await runsOf(agentId);
      const succeeded = runs.filter((r) => r.outcome === "succeeded");
      expect(succeeded.length).toBeGreaterThanOrEqual(3);
      expect(await balance(ownerUsdc)).toBe(100_000_000n - BigInt(succeeded.length) * AMOUNT_UNITS);
      let jupIn = 0n;
      const signatures = new Set<string>();
      const takers = new Set<string>();
      for (const run of succeeded) {
        const result = run.result as Json;
        expect(result).toMatchObject({
          kind: "swap",
          simulated: false,
          inputToken: "USDC",
          outputToken: "JUP",
          inputMint: USDC,
          outputMint: JUP,
          inAmount: AMOUNT,
          inAmountUnits: "1500000",
          routeLabels: ["Local CPMM"],
        });
        const out = BigInt(result.outAmountUnits as string);
        expect(out).toBeGreaterThanOrEqual(BigInt(result.minimumOutUnits as string));
        expect(result.price).toBeCloseTo(Number(out) / 1e6 / AMOUNT, 9);
        expect(result.price as number).toBeGreaterThanOrEqual(1.5);
        expect(typeof result.priceImpactPct).toBe("string");
        jupIn += out;
        signatures.add(result.signature as string);
        // Three signers: the executor pays, the owner's delegate moves the amount to the run's own
        // taker, which signs the route; the owner's key is never needed.
        const taker = result.taker as string;
        expect([executor, delegate]).not.toContain(taker);
        takers.add(taker);
        const landed = await expectLandedAsRecorded(chain, result, { executor, delegate, taker });
        // The taker's account was closed in the same transaction: it holds nothing, and no rent.
        expect(await chain.rpc.getAccountInfo(await ata(taker, USDC)).send()).toMatchObject({ value: null });
        // The route's accounts were loaded through its lookup table (a v0 transaction).
        const message = landed?.transaction.message as { addressTableLookups?: { accountKey: string }[] };
        expect(message.addressTableLookups?.map((l) => l.accountKey)).toEqual([jupiter.lookupTable?.address]);
        expect(landed?.meta?.loadedAddresses?.writable).toEqual(
          expect.arrayContaining([pool?.vaultA, pool?.vaultB]),
        );
        // Compute budget first: a unit limit of about 1.2× what the simulation used, and the route's price.
        const keys = landed?.transaction.message.accountKeys ?? [];
        const [limitIx, priceIx] = landed?.transaction.message.instructions ?? [];
        expect(keys[limitIx?.programIdIndex ?? -1]).toBe("ComputeBudget111111111111111111111111111111");
        const limitData = Buffer.from(getBase58Encoder().encode(limitIx?.data ?? ""));
        const priceData = Buffer.from(getBase58Encoder().encode(priceIx?.data ?? ""));
        expect([limitData[0], priceData[0]]).toEqual([2, 3]);
        const consumed = Number(landed?.meta?.computeUnitsConsumed);
        const limit = limitData.readUInt32LE(1);
        expect(limit).toBeGreaterThanOrEqual(consumed);
        expect(limit).toBeLessThanOrEqual(Math.ceil(consumed * 1.3));
        expect(priceData.readBigUInt64LE(1)).toBe(SERVER_COMPUTE_UNIT_PRICE);
      }
      expect(signatures.size).toBe(succeeded.length);
      // One taker a run.
      expect(takers.size).toBe(succeeded.length);
      expect(await balance(ownerJup)).toBe(jupIn);
      // The delegate holds nothing across transactions; the allowance went down by what was swapped.
      expect(await balance(await ata(delegate, USDC))).toBe(0n);
      expect(await balance(await ata(delegate, JUP))).toBe(0n);
      expect(await owners.tokenAccount(ownerUsdc)).toMatchObject({
        delegate,
        delegatedAmount: { amount: String(15_000_000n - BigInt(succeeded.length) * AMOUNT_UNITS) },
      });
      // Every request named a run's taker (never the delegate) as taker and as payer, the owner's
      // account as destination; the executor's address was never sent to the Swap API.
      for (const request of jupiter.requests()) {
        expect([delegate, executor, owner.address]).not.toContain(request.get("taker"));
        expect(request.get("payer")).toBe(request.get("taker"));
        expect([...request.values()]).not.toContain(executor);
        expect(request.get("destinationTokenAccount")).toBe(ownerJup);
        expect(request.get("wrapAndUnwrapSol")).toBe("false");
      }

      // The skipped run on every protocol the service speaks.
      const protocols = [...createProtocols(server.baseUrl), grpcJsProtocol(server.baseUrl)];
      try {
        for (const protocol of protocols) {
          const listed = await protocol.call(AgentService, "ListAgentRuns", { agentId, limit: 100 });
          if (!listed.ok) throw new Error(`${protocol.name}: ${listed.message}`);
          const page = listed.json.data as unknown as { runs: Json[] };
          const seen = page.runs.find((r) => r.outcome === "skipped");
          expect(seen?.result, protocol.name).toMatchObject({ skipped: true, minPrice: 1.5, maxPrice: 2.5 });
        }
      } finally {
        for (const protocol of protocols) protocol.close();
      }

      // Back in band; the owner revokes: the next runs fail naming the allowance, then the agent fails.
      await chain.raw("surfnet_setTokenAccount", [pool?.address, JUP, { amount: Number(RESERVE_JUP) }]);
      await chain.sendAndConfirm(owner, [getRevokeInstruction({ source: ownerUsdc, owner })]);
      const usdcBefore = await balance(ownerUsdc);
      await expectFailedAfterRevoke(owners, agentId, SLOT_MS);
      expect(await balance(ownerUsdc)).toBe(usdcBefore);
    });

    it("asks again with fewer accounts while the transaction is over 1,232 bytes, then swaps", async () => {
      jupiter.setMode("oversize-transaction");
      try {
        const usdcBefore = await balance(ownerUsdc);
        const jupBefore = await balance(ownerJup);
        const asked = jupiter.requests().length;
        const agentId = await createSwap({});
        await owners.approve(agentId, 15, owner);
        const swapped = await until(
          async () => (await runsOf(agentId)).find((r) => r.outcome === "succeeded"),
          3 * SLOT_MS + 15_000,
          "a swap of the smaller route",
        );
        await ok("POST", `/v1/agents/${agentId}:pause`);
        const maxAccounts = jupiter
          .requests()
          .slice(asked)
          .map((r) => r.get("maxAccounts"));
        // Jupiter's own count first, then 32, then 20 (at most 24 fits); another agent's attempt still
        // in flight from an earlier case may interleave, so the order is checked by position.
        expect(maxAccounts).toContain(null);
        expect(maxAccounts.indexOf("32")).toBeGreaterThan(maxAccounts.indexOf(null));
        expect(maxAccounts.indexOf("20")).toBeGreaterThan(maxAccounts.indexOf("32"));
        const out = BigInt((swapped.result as Json).outAmountUnits as string);
        const runs = (await runsOf(agentId)).filter((r) => r.outcome === "succeeded").length;
        expect(await balance(ownerUsdc)).toBe(usdcBefore - BigInt(runs) * AMOUNT_UNITS);
        expect(await balance(ownerJup)).toBeGreaterThanOrEqual(jupBefore + out);
      } finally {
        jupiter.setMode("honest");
      }
    });

    /** Each hostile answer, and what the run must say; nothing moves on chain. */
    const HOSTILE: [JupiterSwapServerMode, RegExp][] = [
      // The taker holds no allowance over the owner's account: the token program refuses it.
      ["extra-transfer-out-of-owner", /the swap failed in its simulation/],
      ["approve-spliced", /setup instruction 0 is a token Approve/],
      ["set-authority-spliced", /setup instruction 0 is a token SetAuthority/],
      [
        "foreign-destination",
        /adds 0 base units to the owner's output account, less than the quote's minimum/,
      ],
      ["unknown-program", /setup instruction 0 calls \w+, a program not on SWAP_ALLOWED_PROGRAMS/],
      ["low-minimum-out", /minimum out .* implies a price of [\d.]+, below minPrice 1\.5/],
      ["no-route", /no route: the Swap API found no route from 1\.5 USDC to JUP/],
      ["slippage-6001", /slippage exceeded in its simulation/],
      // Last: upstream faults count toward the Swap API's circuit breaker (5 in a row open it for
      // 30 s), which would fail the cases after them for a reason of its own.
      ["huge-answer", /no swap route could be had/],
      ["never-answers", /no swap route could be had/],
    ];

    it.each(HOSTILE)("refuses a hostile answer before sending: %s", async (mode, reason) => {
      jupiter.setMode(mode);
      try {
        // The owner's output account exists (as after earlier swaps), and the allowance covers the run.
        await chain.setTokenBalance(owner.address, JUP, 0n);
        const usdcBefore = await balance(ownerUsdc);
        const agentId = await createSwap({ minPrice: 1.5 });
        const approval = await owners.approve(agentId, 15, owner);
        const delegate = approval.delegate as string;
        // The slot settled: its last attempt (SCHEDULER_MAX_ATTEMPTS 2), or its only one when no retry
        // can mend it. Waited for, so that no retry of it meets the next case's mode.
        const failed = await until(
          async () =>
            (await runsOf(agentId)).find(
              (r) => r.outcome === "failed" && (r.attempt === 2 || /no route/.test(String(r.error))),
            ),
          3 * SLOT_MS + 15_000,
          `a slot refused in mode ${mode}`,
        );
        await ok("POST", `/v1/agents/${agentId}:pause`).catch(() => undefined);
        for (const run of await runsOf(agentId)) expect(run.outcome).toBe("failed");
        expect(failed.error).toMatch(reason);
        expect(failed.result).toBeUndefined();
        // Nothing moved: the owner's tokens and allowance, the delegate's and the stranger's accounts.
        expect(await balance(ownerUsdc)).toBe(usdcBefore);
        expect(await balance(ownerJup)).toBe(0n);
        expect(await owners.tokenAccount(ownerUsdc)).toMatchObject({
          delegate,
          delegatedAmount: { amount: "15000000" },
        });
        expect(await balance(await ata(delegate, USDC))).toBe(0n);
        expect(await balance(await ata(jupiter.stranger, USDC))).toBe(0n);
        expect(await balance(await ata(jupiter.stranger, JUP))).toBe(0n);
        await ok("DELETE", `/v1/agents/${agentId}`);
      } finally {
        jupiter.setMode("honest");
      }
    });

    it("fails a slot at once on too little balance, naming both figures, and sends nothing", async () => {
      const usdcBefore = await balance(ownerUsdc);
      const amount = Number(usdcBefore / 1_000_000n) + 10;
      const agentId = await createSwap({ amount });
      await owners.approve(agentId, amount * 2, owner);
      const failed = await until(
        async () => (await runsOf(agentId)).find((r) => r.outcome === "failed"),
        3 * SLOT_MS + 15_000,
        "a run refused for its balance",
      );
      await ok("POST", `/v1/agents/${agentId}:pause`).catch(() => undefined);
      expect(failed.error).toMatch(
        new RegExp(`insufficient balance: the wallet holds [\\d.]+ USDC, the run swaps ${amount} USDC`),
      );
      // Not retried: a balance no retry mends fails its slot at once.
      expect(failed.attempt).toBe(1);
      expect(await balance(ownerUsdc)).toBe(usdcBefore);
    });
  });
});

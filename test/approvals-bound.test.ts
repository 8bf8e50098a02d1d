/**
 * Approvals are bound to their owner: the confused-deputy attack, step by step over the public
 * API, with real API keys and real signatures on the embedded chain, on the memory store and on
 * MongoDB (FerretDB).
 *
 * Wallet A approves the delegate of alice's agents. Mallory, with her own key, creates an agent
 * whose source is wallet A and whose destination is her wallet M. Her agent's delegate is the one
 * derived for (mallory, A), which A never approved: the agent waits, pending, saying what it waits
 * for, and nothing moves over several of its slots. Even forced to active (as an agent approved
 * once and replaced since would be), each of its runs fails with the allowance reason. And a
 * wallet shared by two owners' agents: each owner's runs spend only that owner's delegate's
 * allowance. Schedule time runs 1200 times faster: an hourly agent runs every 3 s.
 */
import { randomBytes } from "node:crypto";
import { type Address, generateKeyPairSigner, type KeyPairSigner } from "@solana/kit";
import { findAssociatedTokenPda, TOKEN_PROGRAM_ADDRESS } from "@solana-program/token";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { loadCatalog } from "../src/token/catalog.ts";
import { type ChainClient, createChainClient } from "./support/chain-client.ts";
import { type RunningServer, startServer } from "./support/start-server.ts";
import { createTransferOwner, type Json, until } from "./support/transfer-owner.ts";

const mintOf = (symbol: string) => loadCatalog().tokens.find((t) => t.symbol === symbol)?.mint as Address;
const USDC = mintOf("USDC");
const USDT = mintOf("USDT");
const SLOT_MS = 3_000;
const ADMIN_KEY = randomBytes(24).toString("base64url");

const STORES: [string, () => Record<string, string>][] = [
  ["memory", () => ({})],
  [
    "mongo",
    () => ({
      MONGODB_URI: inject("mongoUri"),
      MONGODB_DB: `approvals_bound_${randomBytes(3).toString("hex")}`,
    }),
  ],
];

const ata = async (owner: Address, mint: Address): Promise<Address> =>
  (await findAssociatedTokenPda({ owner, mint, tokenProgram: TOKEN_PROGRAM_ADDRESS }))[0];

describe.concurrent.each(STORES)("approvals bound to their owner, on the %s store", (storeName, storeEnv) => {
  // The stores' suites run at once, each on a server, chain and clients of its own (they mostly
  // wait on schedule slots); within a store, the cases run in order, as they share that server.
  describe("in order", { concurrent: false }, () => {
    let server: RunningServer;
    let chain: ChainClient;
    let walletA: KeyPairSigner;
    const owners: Record<string, ReturnType<typeof createTransferOwner>> = {};

    beforeAll(async () => {
      server = await startServer({
        env: {
          ...storeEnv(),
          AUTH_MODE: "apikey",
          ADMIN_API_KEY: ADMIN_KEY,
          SCHEDULER_ENABLED: "true",
          SCHEDULE_TIME_SCALE: String(3_600_000 / SLOT_MS),
          SCHEDULER_POLL_INTERVAL_MS: "100",
          SCHEDULER_RETRY_BASE_MS: "100",
          SCHEDULER_MAX_CONSECUTIVE_FAILURES: "2",
        },
      });
      chain = createChainClient(server.localChain?.url as string);
      const admin = createTransferOwner({ baseUrl: server.baseUrl, chain, key: ADMIN_KEY });
      for (const owner of ["alice", "mallory", "bob"]) {
        const created = await admin.ok("POST", "/v1/apikeys", {
          owner,
          scopes: ["agents:read", "agents:write"],
        });
        owners[owner] = createTransferOwner({ baseUrl: server.baseUrl, chain, key: created.key as string });
      }
      walletA = await generateKeyPairSigner();
      await chain.airdrop(walletA.address, 1n);
      await chain.setTokenBalance(walletA.address, USDC, 100_000_000n);
      await chain.setTokenBalance(walletA.address, USDT, 100_000_000n);
    });

    afterAll(async () => {
      if (storeName === "mongo") {
        await server?.context.mongoClient?.db(server.context.config.mongo?.dbName).dropDatabase();
      }
      await server?.close();
    });

    it("mallory's agent on alice's approved wallet moves nothing: it waits, and forced to run, every run fails on the allowance", async () => {
      const alice = owners.alice as ReturnType<typeof createTransferOwner>;
      const mallory = owners.mallory as ReturnType<typeof createTransferOwner>;
      const feePayer = (await alice.ok("GET", "/v1/executor")).address as string;
      const walletB = (await generateKeyPairSigner()).address;
      const walletM = (await generateKeyPairSigner()).address;
      const accountA = await ata(walletA.address, USDC);
      const accountM = await ata(walletM, USDC);

      // 2. Alice: a transfer agent from wallet A, approved by wallet A's own signature for 50 USDC.
      const aliceAgent = await alice.createTransfer({
        source: walletA.address,
        destination: walletB,
        amount: 1,
        token: "USDC",
      });
      const aliceApproval = await alice.approve(aliceAgent, 50, walletA);
      const aliceDelegate = aliceApproval.delegate as string;
      expect(aliceDelegate).not.toBe(feePayer);
      // What alice's agents on this account need in a day: 1 USDC hourly.
      expect(aliceApproval).toMatchObject({ neededPerDay: "24000000", sharedBy: 1 });
      expect(await alice.tokenAccount(accountA)).toMatchObject({ delegate: aliceDelegate });

      // 3. Mallory: her own agent naming wallet A as its source, 7 USDC an hour to her wallet M.
      const malloryAgent = await mallory.createTransfer({
        source: walletA.address,
        destination: walletM,
        amount: 7,
        token: "USDC",
      });
      // Her approval would name another delegate, which wallet A never signs for.
      const malloryDelegate = (
        await mallory.ok("POST", `/v1/agents/${malloryAgent}:prepareApproval`, { allowance: 7 })
      ).delegate as string;
      expect(malloryDelegate).not.toBe(aliceDelegate);
      expect(malloryDelegate).not.toBe(feePayer);

      // 4. Several schedule hours later: alice's agent ran; mallory's waits, and M holds nothing.
      await until(
        async () => {
          const runs = (await alice.runsOf(aliceAgent)).filter((r) => r.outcome === "succeeded");
          return runs.length >= 3 ? runs : undefined;
        },
        6 * SLOT_MS + 10_000,
        "three of alice's runs succeeded",
      );
      const waiting = await mallory.ok("GET", `/v1/agents/${malloryAgent}`);
      expect(waiting.status).toBe("pending");
      expect(waiting.pendingReason).toContain(walletA.address);
      expect(waiting.pendingReason).toContain(malloryDelegate);
      expect(waiting.pendingReason).toMatch(/at least 7 USDC.*PrepareApproval/);
      expect(await mallory.runsOf(malloryAgent)).toEqual([]);
      expect(await mallory.balance(accountM)).toBe(0n);

      // 5. Forced to active, as an agent whose wallet approved it once and approved alice since
      // would be: every run fails on the allowance, before anything is signed.
      await server.context.agentStore.update("mallory", malloryAgent, () => ({
        status: "active",
        nextRunAt: new Date(),
      }));
      const failed = await until(
        async () => {
          const agent = await mallory.ok("GET", `/v1/agents/${malloryAgent}`);
          return agent.status === "failed" ? agent : undefined;
        },
        4 * SLOT_MS + 10_000,
        "mallory's agent failed",
      );
      const runs = await mallory.runsOf(malloryAgent);
      expect(runs.length).toBeGreaterThanOrEqual(2);
      for (const run of runs) {
        expect(run.outcome).toBe("failed");
        expect(run.error).toMatch(/no allowance: the source has not approved this agent's delegate/);
        expect(run.error).toContain(malloryDelegate);
      }
      expect(failed.failureReason).toMatch(/allowance/);
      expect(await mallory.balance(accountM)).toBe(0n);
      // Wallet A's allowance went only to alice's runs.
      const aliceRuns = await alice.pauseSettled(
        aliceAgent,
        async (n) => (await alice.balance(accountA)) === 100_000_000n - BigInt(n) * 1_000_000n,
      );
      expect(await alice.tokenAccount(accountA)).toMatchObject({
        delegate: aliceDelegate,
        delegatedAmount: { amount: String(50_000_000 - aliceRuns * 1_000_000) },
      });
      expect(await alice.balance(accountA)).toBe(100_000_000n - BigInt(aliceRuns) * 1_000_000n);
    });

    it("mallory's swap agent on alice's approved wallet swaps nothing: it waits, and forced to run, every run fails on the allowance", async () => {
      const alice = owners.alice as ReturnType<typeof createTransferOwner>;
      const mallory = owners.mallory as ReturnType<typeof createTransferOwner>;
      const walletB = (await generateKeyPairSigner()).address;
      const accountA = await ata(walletA.address, USDC);
      // Alice's transfer agent on wallet A, approved by wallet A for 30 USDC.
      const aliceAgent = await alice.createTransfer({
        source: walletA.address,
        destination: walletB,
        amount: 1,
        token: "USDC",
      });
      const aliceDelegate = (await alice.approve(aliceAgent, 30, walletA)).delegate as string;
      // Mallory names wallet A in a swap of its USDC: her (mallory, A) delegate is not alice's.
      const malloryAgent = (
        await mallory.ok("POST", "/v1/agents", {
          type: "swap",
          config: {
            wallet: walletA.address,
            inputToken: "USDC",
            outputToken: "JUP",
            amount: 5,
            schedule: "hourly",
          },
        })
      ).agentId as string;
      const malloryDelegate = (
        await mallory.ok("POST", `/v1/agents/${malloryAgent}:prepareApproval`, { allowance: 5 })
      ).delegate as string;
      expect(malloryDelegate).not.toBe(aliceDelegate);
      // Slots go by: alice's agent runs, mallory's waits.
      await until(
        async () =>
          (await alice.runsOf(aliceAgent)).filter((r) => r.outcome === "succeeded").length >= 2
            ? true
            : undefined,
        5 * SLOT_MS + 10_000,
        "two of alice's runs succeeded",
      );
      const waiting = await mallory.ok("GET", `/v1/agents/${malloryAgent}`);
      expect(waiting.status).toBe("pending");
      expect(waiting.pendingReason).toContain(malloryDelegate);
      expect(await mallory.runsOf(malloryAgent)).toEqual([]);
      // Neither owner reaches the other's agent.
      expect((await mallory.rest("GET", `/v1/agents/${aliceAgent}`)).status).toBe(404);
      expect((await alice.rest("GET", `/v1/agents/${malloryAgent}`)).status).toBe(404);
      expect((await mallory.rest("GET", `/v1/agents/${aliceAgent}/runs`)).status).toBe(404);
      const aliceRuns = await alice.pauseSettled(aliceAgent, async (n) => {
        const info = await alice.tokenAccount(accountA);
        return (
          (info?.delegatedAmount as { amount?: string } | undefined)?.amount ===
          String(30_000_000 - n * 1_000_000)
        );
      });
      const usdcBefore = await alice.balance(accountA);
      // Forced to active: each run fails on the allowance before any route is asked for or signed.
      await server.context.agentStore.update("mallory", malloryAgent, () => ({
        status: "active",
        nextRunAt: new Date(),
      }));
      await until(
        async () =>
          (await mallory.ok("GET", `/v1/agents/${malloryAgent}`)).status === "failed" ? true : undefined,
        4 * SLOT_MS + 10_000,
        "mallory's swap agent failed",
      );
      const runs = await mallory.runsOf(malloryAgent);
      expect(runs.length).toBeGreaterThanOrEqual(2);
      for (const run of runs) {
        expect(run.outcome).toBe("failed");
        expect(run.error).toMatch(/no allowance: .*this agent's delegate/);
        expect(run.error).toContain(malloryDelegate);
      }
      // Wallet A's USDC and its approval to alice's delegate are untouched.
      expect(await alice.balance(accountA)).toBe(usdcBefore);
      expect(await alice.tokenAccount(accountA)).toMatchObject({
        delegate: aliceDelegate,
        delegatedAmount: { amount: String(30_000_000 - aliceRuns * 1_000_000) },
      });
      await alice.ok("DELETE", `/v1/agents/${aliceAgent}`);
    });

    it("an agent whose wallet approved the former shared executor fails its runs, saying to approve again", async () => {
      const alice = owners.alice as ReturnType<typeof createTransferOwner>;
      const feePayer = (await alice.ok("GET", "/v1/executor")).address as string;
      const wallet = (await generateKeyPairSigner()).address;
      const destination = (await generateKeyPairSigner()).address;
      // The approval as it was made before delegates were per owner and wallet: to the executor.
      const set = await chain.raw("surfnet_setTokenAccount", [
        wallet,
        USDC,
        { amount: 10_000_000, delegate: feePayer, delegatedAmount: 10_000_000 },
      ]);
      expect(set.error).toBeUndefined();
      const agentId = await alice.createTransfer({ source: wallet, destination, amount: 1, token: "USDC" });
      // Active since before the change, as a migrated agent is.
      await server.context.agentStore.update("alice", agentId, () => ({
        status: "active",
        nextRunAt: new Date(),
      }));
      const [run] = await until(
        async () => {
          const runs = await alice.runsOf(agentId);
          return runs.length > 0 ? runs : undefined;
        },
        2 * SLOT_MS + 10_000,
        "a run of the migrated agent",
      );
      const delegate = (await alice.ok("POST", `/v1/agents/${agentId}:prepareApproval`, { allowance: 1 }))
        .delegate;
      expect(run).toMatchObject({ outcome: "failed", attempt: 1 });
      expect(run?.error).toBe(
        `the source's USDC approval names the service's former shared executor ${feePayer}, which no longer moves tokens: approve again with PrepareApproval, which names this agent's own delegate ${delegate}`,
      );
      expect(await alice.balance(await ata(destination, USDC))).toBe(0n);
      await alice.ok("DELETE", `/v1/agents/${agentId}`);
    });

    it("one wallet, two owners' agents: each owner's runs spend only that owner's delegate's allowance", async () => {
      const alice = owners.alice as ReturnType<typeof createTransferOwner>;
      const bob = owners.bob as ReturnType<typeof createTransferOwner>;
      const walletB = (await generateKeyPairSigner()).address;
      const walletC = (await generateKeyPairSigner()).address;
      const accountAusdc = await ata(walletA.address, USDC);
      const accountAusdt = await ata(walletA.address, USDT);
      const usdcBefore = await alice.balance(accountAusdc);
      // Alice moves USDC from wallet A, bob moves USDT from the same wallet; A approves each.
      const aliceAgent = await alice.createTransfer({
        source: walletA.address,
        destination: walletB,
        amount: 1,
        token: "USDC",
      });
      const bobAgent = await bob.createTransfer({
        source: walletA.address,
        destination: walletC,
        amount: 2,
        token: "USDT",
      });
      const aliceDelegate = (await alice.approve(aliceAgent, 20, walletA)).delegate as string;
      const bobDelegate = (await bob.approve(bobAgent, 10, walletA)).delegate as string;
      expect(bobDelegate).not.toBe(aliceDelegate);
      const succeeded = async (who: ReturnType<typeof createTransferOwner>, agentId: string) =>
        (await who.runsOf(agentId)).filter((r: Json) => r.outcome === "succeeded").length;
      await until(
        async () =>
          (await succeeded(alice, aliceAgent)) >= 2 && (await succeeded(bob, bobAgent)) >= 2
            ? true
            : undefined,
        5 * SLOT_MS + 10_000,
        "two runs of each owner's agent",
      );
      const aliceRuns = await alice.pauseSettled(
        aliceAgent,
        async (n) => (await alice.balance(accountAusdc)) === usdcBefore - BigInt(n) * 1_000_000n,
      );
      const bobRuns = await bob.pauseSettled(
        bobAgent,
        async (n) => (await bob.balance(await ata(walletC, USDT))) === BigInt(n) * 2_000_000n,
      );
      expect(await alice.tokenAccount(accountAusdc)).toMatchObject({
        delegate: aliceDelegate,
        delegatedAmount: { amount: String(20_000_000 - aliceRuns * 1_000_000) },
      });
      expect(await bob.tokenAccount(accountAusdt)).toMatchObject({
        delegate: bobDelegate,
        delegatedAmount: { amount: String(10_000_000 - bobRuns * 2_000_000) },
      });
      expect(await alice.balance(accountAusdc)).toBe(usdcBefore - BigInt(aliceRuns) * 1_000_000n);
      expect(await bob.balance(await ata(walletC, USDT))).toBe(BigInt(bobRuns) * 2_000_000n);
    });
  });
});

/**
 * The executor's rent, farmed by owners (finding N4 of hardening round 4). An owner whose runs
 * create an account they then close takes that account's rent from the executor at every run:
 * - a swap agent's owner closes its output account after each swap: the executor must never
 *   create it again (the wallet's approval creates it, at the wallet's cost), and a run that
 *   finds it missing skips its slot;
 * - a transfer's recipient closes its account after each transfer: a run may create it again,
 *   the executor paying, at most TRANSFER_MAX_ACCOUNT_CREATIONS_PER_DAY (1) times a schedule day;
 *   past that the slot is skipped, and the rent paid is a metric.
 * The chain's balances say what the executor paid, not the service. Schedule time runs 1200 times
 * faster: an hourly agent runs every 3 s, and a schedule day is 72 s.
 */
import { type Address, generateKeyPairSigner, type KeyPairSigner } from "@solana/kit";
import {
  findAssociatedTokenPda,
  getBurnCheckedInstruction,
  getCloseAccountInstruction,
  getTransferCheckedInstruction,
  TOKEN_PROGRAM_ADDRESS,
} from "@solana-program/token";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadCatalog } from "../src/token/catalog.ts";
import { type AgentOnChain, fastScheduleEnv } from "./support/agent-on-chain.ts";
import type { ChainClient } from "./support/chain-client.ts";
import { type SwapOnChain, startSwapOnChain } from "./support/swap-on-chain.ts";
import { type Json, until } from "./support/transfer-owner.ts";

const catalog = loadCatalog().tokens;
const USDC = catalog.find((t) => t.symbol === "USDC")?.mint as Address;
const JUP = catalog.find((t) => t.symbol === "JUP")?.mint as Address;
const SLOT_MS = 3_000;
/** The rent of an SPL Token account (165 bytes) under Solana's default rent. */
const TOKEN_ACCOUNT_RENT = 2_039_280n;
/** The base fee of a signature. */
const SIGNATURE_FEE = 5_000n;

const ata = async (wallet: Address, mint: Address) =>
  (await findAssociatedTokenPda({ owner: wallet, mint, tokenProgram: TOKEN_PROGRAM_ADDRESS }))[0];

describe("the executor pays no rent an owner can farm", { concurrent: false }, () => {
  let onChain: SwapOnChain | undefined;
  let chain: ChainClient;
  let owner: KeyPairSigner;
  let owners: AgentOnChain["owners"];
  let executor: Address;
  const ok = (method: string, path: string, body?: object) => owners.ok(method, path, body);
  const lamportsOf = async (account: Address) => (await chain.rpc.getBalance(account).send()).value;

  beforeAll(async () => {
    onChain = await startSwapOnChain({
      env: {
        ...fastScheduleEnv(SLOT_MS),
        SCHEDULER_RETRY_MAX_MS: "200",
        SCHEDULER_MAX_ATTEMPTS: "2",
        // Slots skipped for a missing account are not failures; nothing here should fail at all.
        SCHEDULER_MAX_CONSECUTIVE_FAILURES: "100",
      },
      funds: [[USDC, 100_000_000n]],
      jupiter: {
        pools: [{ mintA: USDC, mintB: JUP, reserveA: 1_000_000_000_000n, reserveB: 2_000_000_000_000n }],
      },
    });
    ({ chain, owner, owners } = onChain);
    executor = (await ok("GET", "/v1/executor")).address as Address;
  });

  afterAll(async () => {
    await onChain?.stop();
  });

  /**
   * Pauses the agent, and resolves with its runs once no attempt is in flight: a run signed just
   * before the pause settles within a few slots.
   */
  const pauseSettled = async (agentId: string): Promise<Json[]> => {
    await ok("POST", `/v1/agents/${agentId}:pause`);
    let seen = -1;
    return until(
      async () => {
        const runs = await owners.runsOf(agentId);
        const same = runs.length === seen;
        seen = runs.length;
        // Two reads a slot apart that agree: nothing was in flight.
        if (!same) await new Promise((resolve) => setTimeout(resolve, SLOT_MS));
        return same ? runs : undefined;
      },
      6 * SLOT_MS,
      `the runs of ${agentId} to settle after its pause`,
    );
  };

  /** Resumes the agent (when paused) and resolves with its first run settled after `count` runs. */
  const nextRun = async (agentId: string, count: number): Promise<Json> => {
    if ((await ok("GET", `/v1/agents/${agentId}`)).status === "paused") {
      await ok("POST", `/v1/agents/${agentId}:resume`);
    }
    return until(
      async () => {
        const runs = await owners.runsOf(agentId);
        // Newest first.
        return runs.length > count ? runs[0] : undefined;
      },
      4 * SLOT_MS + 10_000,
      `a new run of ${agentId}`,
    );
  };

  it("a swap's output account: the wallet's approval creates it, and a run that finds it closed skips", async () => {
    const ownerUsdc = await ata(owner.address, USDC);
    const ownerJup = await ata(owner.address, JUP);
    expect(await owners.tokenAccount(ownerJup)).toBeUndefined();
    const agentId = (
      await ok("POST", "/v1/agents", {
        type: "swap",
        config: {
          wallet: owner.address,
          inputToken: "USDC",
          outputToken: "JUP",
          amount: 1,
          schedule: "hourly",
          slippageBps: 100,
        },
      })
    ).agentId as string;
    const executorBefore = await lamportsOf(executor);
    const walletBefore = await lamportsOf(owner.address);
    // The approval creates the output account, the wallet paying its rent and the fee.
    const approval = await owners.approve(agentId, 10, owner);
    expect(approval.createsAccounts).toEqual([ownerJup]);
    expect(await owners.tokenAccount(ownerJup)).toMatchObject({ owner: owner.address, mint: JUP });
    expect(walletBefore - (await lamportsOf(owner.address))).toBe(TOKEN_ACCOUNT_RENT + SIGNATURE_FEE);

    const first = await until(
      async () => (await owners.runsOf(agentId)).find((r) => r.outcome === "succeeded"),
      4 * SLOT_MS + 15_000,
      "a swap",
    );
    expect((first.result as Json).outputToken).toBe("JUP");
    let runs = await pauseSettled(agentId);
    const swapped = runs.filter((r) => r.outcome === "succeeded").length;

    // The owner empties and closes its output account, taking its rent back.
    const jup = await owners.balance(ownerJup);
    await chain.sendAndConfirm(owner, [
      getBurnCheckedInstruction({ account: ownerJup, mint: JUP, authority: owner, amount: jup, decimals: 6 }),
      getCloseAccountInstruction({ account: ownerJup, destination: owner.address, owner }),
    ]);
    expect(await owners.tokenAccount(ownerJup)).toBeUndefined();

    const executorAtClose = await lamportsOf(executor);
    const skipped = await nextRun(agentId, runs.length);
    expect(skipped.outcome).toBe("skipped");
    expect((skipped.result as Json).reason).toMatch(
      new RegExp(
        `the wallet has no JUP account to receive the swap \\(its associated token account ${ownerJup}\\).*PrepareApproval`,
      ),
    );
    runs = await pauseSettled(agentId);
    // Every run since the close was skipped; the service created nothing and paid nothing.
    expect(runs.filter((r) => r.outcome === "succeeded").length).toBe(swapped);
    expect(runs.filter((r) => r.outcome === "failed")).toEqual([]);
    expect(await owners.tokenAccount(ownerJup)).toBeUndefined();
    expect(await lamportsOf(executor)).toBe(executorAtClose);
    // Over the whole story, the executor paid each swap's fees and no rent: each swap's signatures,
    // the taker's account lent and given back in the same transaction.
    const fees = runs
      .filter((r) => r.outcome === "succeeded")
      .reduce((sum, r) => sum + BigInt((r.result as Json).fee as number), 0n);
    expect(executorBefore - (await lamportsOf(executor))).toBe(fees);
    // The USDC moved only for the swaps that succeeded.
    expect(await owners.balance(ownerUsdc)).toBe(100_000_000n - BigInt(swapped) * 1_000_000n);
  });

  it("a transfer's recipient who closes its account gets it created once a day, then the slots skip", async () => {
    const recipient = await generateKeyPairSigner();
    await chain.airdrop(recipient.address, 1n);
    const recipientUsdc = await ata(recipient.address, USDC);
    const ownerUsdc = await ata(owner.address, USDC);
    const agentId = (
      await ok("POST", "/v1/agents", {
        type: "transfer",
        config: {
          source: owner.address,
          destination: recipient.address,
          amount: 1,
          token: "USDC",
          schedule: "hourly",
        },
      })
    ).agentId as string;
    const approval = await owners.approve(agentId, 50, owner);
    // The approval made the recipient's account, at the wallet's cost.
    expect(approval.createsAccounts).toEqual([recipientUsdc]);
    expect(await owners.tokenAccount(recipientUsdc)).toMatchObject({ owner: recipient.address });
    const executorBefore = await lamportsOf(executor);

    /** The recipient sends its USDC back and closes its account, taking its rent. */
    const closeRecipient = async () => {
      const held = await owners.balance(recipientUsdc);
      await chain.sendAndConfirm(recipient, [
        getTransferCheckedInstruction({
          source: recipientUsdc,
          mint: USDC,
          destination: ownerUsdc,
          authority: recipient,
          amount: held,
          decimals: 6,
        }),
        getCloseAccountInstruction({
          account: recipientUsdc,
          destination: recipient.address,
          owner: recipient,
        }),
      ]);
    };

    // Run, pause, close, resume: until a slot is skipped for the spent creations.
    let runs: Json[] = [];
    let skipped: Json | undefined;
    for (let round = 0; round < 8 && skipped === undefined; round++) {
      const run = await nextRun(agentId, runs.length);
      runs = await pauseSettled(agentId);
      if (run.outcome === "skipped") skipped = run;
      if ((await owners.tokenAccount(recipientUsdc)) !== undefined) await closeRecipient();
    }
    if (skipped === undefined) throw new Error("no slot skipped once the day's creation was spent");
    expect((skipped.result as Json).reason).toMatch(
      new RegExp(
        `the destination ${recipient.address} has no USDC account \\(its associated token account ${recipientUsdc}\\), and this agent's runs already created it 1 time today.*the most TRANSFER_MAX_ACCOUNT_CREATIONS_PER_DAY allows \\(1\\)`,
      ),
    );
    expect(runs.filter((r) => r.outcome === "failed")).toEqual([]);

    // Within each schedule day, at most one run created the account; each that did says its rent.
    const succeeded = runs.filter((r) => r.outcome === "succeeded");
    const created = succeeded.filter((r) => (r.result as Json).destinationCreated === true);
    expect(created.length).toBeGreaterThanOrEqual(1);
    const days = new Map<string, number>();
    for (const run of created) {
      expect((run.result as Json).rentLamports).toBe(Number(TOKEN_ACCOUNT_RENT));
      const day = String(run.scheduledAt).slice(0, 10);
      days.set(day, (days.get(day) ?? 0) + 1);
    }
    for (const count of days.values()) expect(count).toBe(1);

    // What the executor paid, on chain: two signatures per transfer, and the rent of each creation.
    const spent = executorBefore - (await lamportsOf(executor));
    expect(spent).toBe(
      BigInt(succeeded.length) * 2n * SIGNATURE_FEE + BigInt(created.length) * TOKEN_ACCOUNT_RENT,
    );
    const metrics = await (await fetch(`${onChain?.server.baseUrl}/metrics`)).text();
    expect(metrics).toMatch(
      new RegExp(`^executor_rent_lamports_total ${BigInt(created.length) * TOKEN_ACCOUNT_RENT}$`, "m"),
    );
    expect(metrics).toMatch(new RegExp(`^executor_accounts_created_total ${created.length}$`, "m"));
  });
});

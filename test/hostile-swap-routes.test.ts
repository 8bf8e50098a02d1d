/**
 * Issue 41's table, rerun: a Swap API that answers as an attacker would (test/support/
 * hostile-swap-routes.ts, one mutator per row of the issue's table) against the service on its
 * embedded chain. One owner's wallet holds 100 USDC and 100,000 BONK, with a USDC→USDT swap agent
 * (1 USDC a run, approved for 50) and a BONK transfer agent (approved for 1,000,000 BONK, paused):
 * both share the (owner, wallet) delegate. Another wallet still approves the executor itself for
 * 500 JUP, as approvals from before per-owner delegates did. For each row: the hostile run does
 * not succeed (or, where the service drops or clamps what the route asked, succeeds for exactly
 * its swap), the attacker's lamports and tokens stay 0, the owner's BONK and allowance and the
 * other wallet's JUP and allowance do not move, the executor spends exactly the fees its
 * succeeded runs recorded, and the next honest run succeeds. Then the quote held to the catalog's
 * price, and a pause and a delete that land while a route is slow.
 */
import { type Address, generateKeyPairSigner, type KeyPairSigner } from "@solana/kit";
import { findAssociatedTokenPda, getApproveInstruction, TOKEN_PROGRAM_ADDRESS } from "@solana-program/token";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadCatalog } from "../src/token/catalog.ts";
import { type AgentOnChain, fastScheduleEnv } from "./support/agent-on-chain.ts";
import type { ChainClient } from "./support/chain-client.ts";
import {
  type AnswerMutator,
  createAnswerSwitch,
  HOSTILE_ROUTES,
  type HostileRoute,
  slowAnswer,
} from "./support/hostile-swap-routes.ts";
import type { JupiterSwapServer } from "./support/jupiter-swap-server.ts";
import type { RunningServer } from "./support/start-server.ts";
import { type SwapOnChain, startSwapOnChain } from "./support/swap-on-chain.ts";
import { type Json, until } from "./support/transfer-owner.ts";

const catalog = loadCatalog().tokens;
const mintOf = (symbol: string) => catalog.find((t) => t.symbol === symbol)?.mint as Address;
const USDC = mintOf("USDC");
const USDT = mintOf("USDT");
const BONK = mintOf("BONK");
const JUP = mintOf("JUP");
const SLOT_MS = 3_000;
/** SWAP_MAX_FEE_LAMPORTS' default, and three signatures' base fee. */
const MAX_FEE = 1_000_000n;
const ONE_FEE = MAX_FEE + 3n * 5_000n;
const RESERVE = 1_000_000_000_000n;

const ENV = {
  ...fastScheduleEnv(SLOT_MS),
  SCHEDULER_RETRY_MAX_MS: "200",
  SCHEDULER_MAX_ATTEMPTS: "2",
  // Room for a slow answer (the pause and delete cases) within one attempt.
  JUPITER_SWAP_TIMEOUT_MS: "8000",
};

/** Each row, and what its run must say (a RegExp), or "succeeds" where the service drops or clamps it. */
const ROWS: [HostileRoute, RegExp | "succeeds"][] = [
  ["system-transfer-from-executor", /other instruction 0 calls the System program/],
  ["drain-delegated-accounts", /names the owner's delegate/],
  ["drain-executor-approvals", /names the executor/],
  ["assign-executor", /calls the System program/],
  ["huge-unit-price", "succeeds"],
  [
    "close-taker-input-to-attacker",
    /a route may close only the taker's own account, its rent back to the executor/,
  ],
  ["ata-creations-for-attacker", "succeeds"],
  [
    "out-amount-one",
    /quoted price [\d.e-]+ USDT per USDC is more than 300 bps worse than the reference price 1 USDT per USDC/,
  ],
  ["missing-lookup-table", /its lookup table \w+ is not on chain/],
];

describe("hostile Swap API answers move nothing but the run's swap", () => {
  let server: RunningServer;
  let jupiter: JupiterSwapServer;
  let chain: ChainClient;
  let owner: KeyPairSigner;
  let owners: AgentOnChain["owners"];
  let executor: Address;
  let delegate: string;
  let oldWallet: KeyPairSigner;
  let swapChain: SwapOnChain | undefined;
  const answers = createAnswerSwitch();
  const ok = (method: string, path: string, body?: object) => owners.ok(method, path, body);
  const balance = (account: Address) => owners.balance(account);
  const lamports = async (account: Address) => (await chain.rpc.getBalance(account).send()).value;
  const ata = async (wallet: string, mint: Address) =>
    (
      await findAssociatedTokenPda({ owner: wallet as Address, mint, tokenProgram: TOKEN_PROGRAM_ADDRESS })
    )[0];
  const runsOf = (agentId: string) => owners.runsOf(agentId);
  const createSwap = async () => {
    const agentId = (
      await ok("POST", "/v1/agents", {
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
    // Both agents share the (owner, wallet) delegate.
    expect((await owners.approve(agentId, 50, owner)).delegate).toBe(delegate);
    return agentId;
  };

  /** What no route may move: the attacker's, the owner's BONK, the old approval's wallet. */
  const untouchable = async () => ({
    attackerLamports: await lamports(jupiter.stranger as Address),
    attackerTokens: await Promise.all(
      [USDC, USDT, BONK, JUP].map(async (m) => balance(await ata(jupiter.stranger, m))),
    ),
    // No account made for the attacker at the executor's expense either.
    attackerAccounts: (
      await chain.rpc
        .getTokenAccountsByOwner(
          jupiter.stranger as Address,
          { programId: TOKEN_PROGRAM_ADDRESS },
          { encoding: "base64" },
        )
        .send()
    ).value.length,
    bonk: await owners.tokenAccount(await ata(owner.address, BONK)),
    oldJup: await owners.tokenAccount(await ata(oldWallet.address, JUP)),
  });

  beforeAll(async () => {
    swapChain = await startSwapOnChain({
      env: ENV,
      funds: [
        [USDC, 100_000_000n],
        [BONK, 10_000_000_000n],
        // The owner's output account exists, as after an earlier swap: no run pays its rent.
        [USDT, 0n],
      ],
      jupiter: {
        pools: [{ mintA: USDC, mintB: USDT, reserveA: RESERVE, reserveB: RESERVE }],
        lookupTable: true,
        mutate: answers.mutate,
      },
    });
    ({ server, chain, owners, owner, jupiter } = swapChain);
    // The attacker's token accounts exist, empty: a drain that got through would land in them.
    for (const mint of [USDC, USDT, BONK, JUP])
      await chain.setTokenBalance(jupiter.stranger as Address, mint, 0n);
    executor = (await ok("GET", "/v1/executor")).address as Address;
    // The executor's address is public, but the service never sends it to the Swap API.
    answers.target(executor);

    // The BONK transfer agent: approved for 1,000,000 BONK under the same delegate, then paused.
    const recipient = await generateKeyPairSigner();
    await chain.setTokenBalance(recipient.address, BONK, 0n);
    const transferId = await owners.createTransfer({
      source: owner.address,
      destination: recipient.address,
      amount: 1,
      token: "BONK",
    });
    delegate = (await owners.approve(transferId, 1_000_000, owner)).delegate as string;
    // Paused once active (a pending agent cannot be): whatever it moved before, each case starts after.
    await until(
      async () =>
        (await owners.rest("POST", `/v1/agents/${transferId}:pause`)).status === 200 ? true : undefined,
      15_000,
      "the transfer agent paused",
    );

    // Another wallet's approval of the executor itself, from before per-owner delegates.
    oldWallet = await generateKeyPairSigner();
    await chain.airdrop(oldWallet.address, 1n);
    await chain.setTokenBalance(oldWallet.address, JUP, 500_000_000n);
    await chain.sendAndConfirm(oldWallet, [
      getApproveInstruction({
        source: await ata(oldWallet.address, JUP),
        delegate: executor,
        owner: oldWallet,
        amount: 500_000_000n,
      }),
    ]);
  });

  afterAll(async () => {
    await swapChain?.stop();
  });

  it.each(ROWS)("%s", async (mode, expected) => {
    answers.use(HOSTILE_ROUTES[mode] as AnswerMutator);
    try {
      const agentId = await createSwap();
      const before = await untouchable();
      const usdcBefore = await balance(await ata(owner.address, USDC));
      const executorBefore = await lamports(executor);
      // The hostile slot settles: its last attempt, a final refusal, or a success.
      const settled = await until(
        async () =>
          (await runsOf(agentId)).find(
            (r) =>
              r.outcome === "succeeded" ||
              (r.outcome === "failed" &&
                (r.attempt === 2 || /lookup table|reference price/.test(String(r.error)))),
          ),
        3 * SLOT_MS + 15_000,
        `the slot of mode ${mode} settled`,
      );
      answers.use(undefined);
      if (expected === "succeeds") {
        expect(settled.outcome, String(settled.error)).toBe("succeeded");
        const result = settled.result as Json;
        // Exactly the swap: 1 USDC in, at least the minimum out, one bounded fee.
        expect(result.inAmountUnits).toBe("1000000");
        expect(BigInt(result.outAmountUnits as string)).toBeGreaterThanOrEqual(
          BigInt(result.minimumOutUnits as string),
        );
        expect(BigInt(result.fee as number)).toBeLessThanOrEqual(ONE_FEE);
      } else {
        expect(settled.outcome).toBe("failed");
        expect(settled.error).toMatch(expected);
      }
      // The next honest run succeeds.
      const honest = await until(
        async () =>
          (await runsOf(agentId)).find((r) => r.outcome === "succeeded" && r.runId !== settled.runId),
        3 * SLOT_MS + 15_000,
        `an honest run after mode ${mode}`,
      );
      expect((honest.result as Json).inAmountUnits).toBe("1000000");
      await ok("POST", `/v1/agents/${agentId}:pause`);
      // A run in flight when the pause landed signs nothing (see the pause case below).
      await new Promise((resolve) => setTimeout(resolve, 500));

      const runs = await runsOf(agentId);
      const succeeded = runs.filter((r) => r.outcome === "succeeded");
      expect(await untouchable()).toEqual(before);
      expect(await balance(await ata(owner.address, USDC))).toBe(
        usdcBefore - BigInt(succeeded.length) * 1_000_000n,
      );
      // The executor paid exactly the fees its succeeded runs recorded: no rent, no lamports out.
      const fees = succeeded.reduce((sum, r) => sum + BigInt((r.result as Json).fee as number), 0n);
      expect(executorBefore - (await lamports(executor))).toBe(fees);
      // Its account is still a plain system account that can pay.
      const { value } = await chain.rpc.getAccountInfo(executor, { encoding: "base64" }).send();
      expect(value?.owner).toBe("11111111111111111111111111111111");
      await ok("DELETE", `/v1/agents/${agentId}`);
    } finally {
      answers.use(undefined);
    }
  });

  it("fails the slot on a quote worse than the catalog's price by more than 300 bps, naming both prices", async () => {
    const [pool] = jupiter.pools;
    // 0.9 USDT per USDC against the catalog's 1 USDT per USDC.
    await chain.raw("surfnet_setTokenAccount", [
      pool?.address,
      USDT,
      { amount: Number((RESERVE * 9n) / 10n) },
    ]);
    try {
      const usdcBefore = await balance(await ata(owner.address, USDC));
      const agentId = await createSwap();
      const failed = await until(
        async () => (await runsOf(agentId)).find((r) => r.outcome === "failed"),
        3 * SLOT_MS + 15_000,
        "a slot refused on its price",
      );
      await ok("POST", `/v1/agents/${agentId}:pause`);
      expect(failed.error).toMatch(
        /quoted price 0\.89\d* USDT per USDC is more than 300 bps worse than the reference price 1 USDT per USDC/,
      );
      // A price no retry mends: the slot fails at its first attempt.
      expect(failed.attempt).toBe(1);
      expect(await balance(await ata(owner.address, USDC))).toBe(usdcBefore);
      await ok("DELETE", `/v1/agents/${agentId}`);
    } finally {
      await chain.raw("surfnet_setTokenAccount", [pool?.address, USDT, { amount: Number(RESERVE) }]);
    }
  });

  it.each(["pause", "delete"])(
    "signs nothing after a %s that lands while the route is slow",
    async (action) => {
      let asked = 0;
      answers.use(slowAnswer(2_500, () => asked++));
      try {
        const usdcBefore = await balance(await ata(owner.address, USDC));
        const executorBefore = await lamports(executor);
        const agentId = await createSwap();
        await until(async () => (asked > 0 ? true : undefined), 3 * SLOT_MS + 10_000, "a route asked for");
        if (action === "pause") {
          expect((await ok("POST", `/v1/agents/${agentId}:pause`)).status).toBe("paused");
        } else {
          await ok("DELETE", `/v1/agents/${agentId}`);
        }
        // The slow answer comes, and two slots more pass.
        await new Promise((resolve) => setTimeout(resolve, 2_500 + 2 * SLOT_MS));
        expect(await balance(await ata(owner.address, USDC))).toBe(usdcBefore);
        expect(await lamports(executor)).toBe(executorBefore);
        if (action === "pause") {
          const runs = await runsOf(agentId);
          expect(runs.filter((r) => r.outcome === "succeeded")).toEqual([]);
          expect(runs.find((r) => r.outcome === "skipped")?.result).toMatchObject({
            reason: expect.stringMatching(/paused or deleted while this run was under way/),
          });
          await ok("DELETE", `/v1/agents/${agentId}`);
        }
      } finally {
        answers.use(undefined);
      }
    },
  );

  it("counts each refusal by its reason", async () => {
    const metrics = await (await fetch(`${server.baseUrl}/metrics`)).text();
    const count = (reason: string) =>
      Number(
        metrics
          .split("\n")
          .find((l) => l.startsWith(`swap_routes_refused_total{reason="${reason}"}`))
          ?.split(" ")[1],
      );
    // Two attempts each: the transfer and the assign (system), the two drains (authority), the close.
    expect(count("system")).toBeGreaterThanOrEqual(4);
    expect(count("authority")).toBeGreaterThanOrEqual(4);
    expect(count("close")).toBeGreaterThanOrEqual(2);
    // Final at once: the missing table, the price (out-amount-one and the catalog case).
    expect(count("lookup_table")).toBeGreaterThanOrEqual(1);
    expect(count("price")).toBeGreaterThanOrEqual(2);
  });
});

/**
 * A transfer agent as its owner uses it, on the embedded local chain, on the memory store and on
 * MongoDB (FerretDB): a funded wallet, an agent created over REST, the PrepareApproval transaction
 * signed by the wallet with @solana/kit and sent, three slots that move exactly three amounts
 * (the chain's balances and transactions say so, not the service), a revoke that fails the next
 * run with a reason naming the allowance and then the agent, and a new approval that lets it run
 * again after ResumeAgent. Schedule time runs 1200 times faster: an hourly agent runs every 3 s.
 */
import { type Address, address, generateKeyPairSigner, type KeyPairSigner } from "@solana/kit";
import { findAssociatedTokenPda, getRevokeInstruction, TOKEN_PROGRAM_ADDRESS } from "@solana-program/token";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadCatalog } from "../src/token/catalog.ts";
import {
  type AgentOnChain,
  agentStores,
  expectFailedAfterRevoke,
  expectLandedAsRecorded,
  fastScheduleEnv,
  startAgentOnChain,
  stopAgentOnChain,
} from "./support/agent-on-chain.ts";
import type { ChainClient } from "./support/chain-client.ts";
import type { RunningServer } from "./support/start-server.ts";
import { type Json, until } from "./support/transfer-owner.ts";

const USDC = loadCatalog().tokens.find((t) => t.symbol === "USDC")?.mint as Address;
const AMOUNT = 1.1; // 1100000 base units, never 1099999
const AMOUNT_UNITS = 1_100_000n;
const SLOT_MS = 3_000;

const ENV = {
  ...fastScheduleEnv(SLOT_MS),
  // The default cap per run (1000 USD) and a cap per day one run of 600 USD fits under, two do not.
  TRANSFER_MAX_USD_PER_DAY: "1000",
};

const STORES = agentStores("transfer_test");

describe.concurrent.each(STORES)(
  "a transfer agent on the %s store moves real tokens",
  (storeName, storeEnv) => {
    // The stores' suites run at once, each on a server, chain and clients of its own (they mostly
    // wait on schedule slots); within a store, the cases run in order, as they share that server.
    describe("in order", { concurrent: false }, () => {
      let server: RunningServer;
      let chain: ChainClient;
      let owner: KeyPairSigner;
      let destination: Address;
      let ownerAccount: Address;
      let destinationAccount: Address;

      let owners: AgentOnChain["owners"];
      const rest = (method: string, path: string, body?: object) => owners.rest(method, path, body);
      const ok = (method: string, path: string, body?: object) => owners.ok(method, path, body);
      const tokenAccount = (account: Address) => owners.tokenAccount(account);
      const balance = (account: Address) => owners.balance(account);
      const approve = (agentId: string, allowance: number) => owners.approve(agentId, allowance, owner);
      const runsOf = (agentId: string) => owners.runsOf(agentId);
      /**
       * The agent's own delegate (for its owner and source wallet), as a pending agent's reason names
       * it (PrepareApproval would too, once the wallet has a token account).
       */
      const delegateOf = async (agentId: string): Promise<string> => {
        const reason = (await ok("GET", `/v1/agents/${agentId}`)).pendingReason as string;
        return /approve the delegate (\w+)/.exec(reason)?.[1] as string;
      };

      beforeAll(async () => {
        // 1. A wallet funded on the local chain: SOL for its fees, 100 USDC in its token account.
        ({ server, chain, owners, owner } = await startAgentOnChain({ ...ENV, ...storeEnv() }, [
          [USDC, 100_000_000n],
        ]));
        destination = (await generateKeyPairSigner()).address;
        [ownerAccount] = await findAssociatedTokenPda({
          owner: owner.address,
          mint: USDC,
          tokenProgram: TOKEN_PROGRAM_ADDRESS,
        });
        [destinationAccount] = await findAssociatedTokenPda({
          owner: destination,
          mint: USDC,
          tokenProgram: TOKEN_PROGRAM_ADDRESS,
        });
      });

      afterAll(() => stopAgentOnChain(storeName, server));

      it("approve, three slots, revoke, failed, approve again, resume", async () => {
        const executor = (await ok("GET", "/v1/executor")).address as string;

        // 2 and 3. An agent over REST, then the approval its owner signs before its first slot.
        const created = await ok("POST", "/v1/agents", {
          type: "transfer",
          config: { source: owner.address, destination, amount: AMOUNT, token: "usdc", schedule: "hourly" },
        });
        const agentId = created.agentId as string;
        // Until its wallet approves, the agent waits and says for what.
        const waiting = await ok("GET", `/v1/agents/${agentId}`);
        expect(waiting.status).toBe("pending");
        expect(waiting.pendingReason).toMatch(/approve the delegate \w+ for at least 1\.1 USDC/);
        const approval = await approve(agentId, 5.5);
        const delegate = approval.delegate as string;
        // The delegate is this owner's for this wallet; the executor only pays fees.
        expect(delegate).not.toBe(executor);
        expect(waiting.pendingReason).toContain(delegate);
        expect(approval).toMatchObject({
          owner: owner.address,
          mint: USDC,
          tokenAccount: ownerAccount,
          allowance: "5500000",
          decimals: 6,
        });
        expect(await tokenAccount(ownerAccount)).toMatchObject({
          delegate,
          delegatedAmount: { amount: "5500000" },
        });

        // 4. Three slots: the destination holds exactly three amounts, in three transactions.
        const three = await until(
          async () => {
            const runs = (await runsOf(agentId)).filter((r) => r.outcome === "succeeded");
            return runs.length >= 3 ? runs : undefined;
          },
          6 * SLOT_MS + 10_000,
          "three runs succeeded",
        );
        await ok("POST", `/v1/agents/${agentId}:pause`);
        const succeeded = (await runsOf(agentId)).filter((r) => r.outcome === "succeeded");
        expect(succeeded.length).toBeGreaterThanOrEqual(three.length);
        expect(await balance(destinationAccount)).toBe(BigInt(succeeded.length) * AMOUNT_UNITS);
        expect(await balance(ownerAccount)).toBe(100_000_000n - BigInt(succeeded.length) * AMOUNT_UNITS);
        const signatures = new Set<string>();
        for (const run of succeeded) {
          const result = run.result as Json;
          expect(result).toMatchObject({
            kind: "transfer",
            simulated: false,
            token: "USDC",
            mint: USDC,
            amount: AMOUNT,
            amountUnits: "1100000",
            sender: owner.address,
            recipient: destination,
          });
          signatures.add(result.signature as string);
          // Two signers: the executor as fee payer, the owner's delegate as the token authority; the
          // owner's key was never needed.
          await expectLandedAsRecorded(chain, result, { executor, delegate });
        }
        expect(signatures.size).toBe(succeeded.length);
        const listed = await rest("GET", `/v1/tokens/${USDC}/transactions?limit=100`);
        const listedSignatures = new Set((listed.json.data as Json[]).map((t) => t.signature));
        for (const signature of signatures) expect(listedSignatures.has(signature)).toBe(true);
        // The allowance went down by what moved: the chain, not the service, enforces the cap.
        expect(await tokenAccount(ownerAccount)).toMatchObject({
          delegatedAmount: { amount: String(5_500_000n - BigInt(succeeded.length) * AMOUNT_UNITS) },
        });

        // 5. The owner revokes: the next runs fail naming the allowance, then the agent fails.
        await chain.sendAndConfirm(owner, [getRevokeInstruction({ source: ownerAccount, owner })]);
        await expectFailedAfterRevoke(owners, agentId, SLOT_MS);
        const before = await balance(destinationAccount);
        expect(before).toBe(BigInt(succeeded.length) * AMOUNT_UNITS);

        // 6. A new approval, and ResumeAgent: it runs again.
        await approve(agentId, 2.2);
        await ok("POST", `/v1/agents/${agentId}:resume`);
        await until(
          async () => ((await balance(destinationAccount)) > before ? true : undefined),
          2 * SLOT_MS + 10_000,
          "a transfer after the new approval",
        );
        // Every token moved is a succeeded run, once a run signed just before the pause is recorded.
        const settled = await owners.pauseSettled(
          agentId,
          async (n) => (await balance(destinationAccount)) === BigInt(n) * AMOUNT_UNITS,
        );
        expect(settled).toBeGreaterThan(succeeded.length);
      });

      it("fails a slot at once, with the chain's reason and both figures, when no retry can mend it", async () => {
        /** An agent whose source's USDC account the cheatcode sets as `account` says, naming its delegate. */
        const agentOn = async (amount: number, account: Record<string, unknown>): Promise<string> => {
          const source = (await generateKeyPairSigner()).address;
          const created = await ok("POST", "/v1/agents", {
            type: "transfer",
            config: { source, destination, amount, token: "USDC", schedule: "hourly" },
          });
          const agentId = created.agentId as string;
          const response = await chain.raw("surfnet_setTokenAccount", [
            source,
            USDC,
            { ...account, delegate: await delegateOf(agentId) },
          ]);
          expect(response.error).toBeUndefined();
          return agentId;
        };
        const cases: { name: string; agentId: string; reason: RegExp }[] = [
          {
            name: "insufficient balance",
            agentId: await agentOn(AMOUNT, { amount: 500_000, delegatedAmount: 5_000_000 }),
            reason: /insufficient balance: the source holds 0\.5 USDC, the run moves 1\.1 USDC/,
          },
          {
            name: "frozen account",
            agentId: await agentOn(AMOUNT, {
              amount: 5_000_000,
              delegatedAmount: 5_000_000,
              state: "frozen",
            }),
            reason: /the source's USDC account is frozen/,
          },
          {
            name: "over the cap per run",
            agentId: await agentOn(2000, { amount: 5_000_000_000, delegatedAmount: 5_000_000_000 }),
            reason: /2000 USDC \(\d+\.\d\d USD\) is over the cap of 1000 USD per run/,
          },
        ];
        for (const c of cases) {
          const [run] = await until(
            async () => {
              const runs = await runsOf(c.agentId);
              return runs.length > 0 ? runs : undefined;
            },
            2 * SLOT_MS + 10_000,
            `a run of the agent with ${c.name}`,
          );
          expect(run, c.name).toMatchObject({ outcome: "failed", attempt: 1 });
          expect(run?.error, c.name).toMatch(c.reason);
          await ok("DELETE", `/v1/agents/${c.agentId}`);
        }
        // An allowance below one run, or no token account at all: the agent never runs, it waits,
        // saying for what.
        const below = await agentOn(AMOUNT, { amount: 5_000_000, delegatedAmount: 500_000 });
        const none = (
          await ok("POST", "/v1/agents", {
            type: "transfer",
            config: {
              source: (await generateKeyPairSigner()).address,
              destination,
              amount: AMOUNT,
              token: "USDC",
              schedule: "hourly",
            },
          })
        ).agentId as string;
        await new Promise((resolve) => setTimeout(resolve, 2 * SLOT_MS));
        for (const agentId of [below, none]) {
          const agent = await ok("GET", `/v1/agents/${agentId}`);
          expect(agent.status).toBe("pending");
          expect(agent.pendingReason).toMatch(/must approve the delegate \w+ for at least 1\.1 USDC/);
          expect(await runsOf(agentId)).toEqual([]);
          await ok("DELETE", `/v1/agents/${agentId}`);
        }
      });

      it("fails the run that would pass the cap per day, with both figures, after the day's runs under it", async () => {
        const source = (await generateKeyPairSigner()).address;
        const created = await ok("POST", "/v1/agents", {
          type: "transfer",
          config: { source, destination, amount: 600, token: "USDC", schedule: "hourly" },
        });
        const agentId = created.agentId as string;
        const funded = await chain.raw("surfnet_setTokenAccount", [
          source,
          USDC,
          { amount: 5_000_000_000, delegate: await delegateOf(agentId), delegatedAmount: 5_000_000_000 },
        ]);
        expect(funded.error).toBeUndefined();
        const runs = await until(
          async () => {
            const all = await runsOf(agentId);
            return all.some((r) => r.outcome === "failed") ? all : undefined;
          },
          5 * SLOT_MS + 10_000,
          "a run refused by the cap per day",
        );
        await ok("DELETE", `/v1/agents/${agentId}`);
        const byTime = [...runs].sort((a, b) => String(a.scheduledAt).localeCompare(String(b.scheduledAt)));
        const failedAt = byTime.findIndex((r) => r.outcome === "failed");
        const failed = byTime[failedAt] as Json;
        expect(failed).toMatchObject({ attempt: 1 });
        expect(failed.error).toMatch(
          /moving 600\.00 USD more would pass the cap of 1000 USD per day \(600\.00 USD moved today\)/,
        );
        // The day is the slot's UTC day in schedule time, which may turn between two slots here: of
        // the refused run's day, exactly one earlier run moved its 600 USD (USDC at the catalog's $1).
        const day = (run: Json) => String(run.scheduledAt).slice(0, 10);
        const earlier = byTime.slice(0, failedAt).filter((r) => day(r) === day(failed));
        expect(earlier.map((r) => r.outcome)).toEqual(["succeeded"]);
        expect(earlier[0]?.result).toMatchObject({ usdValue: 600 });
      });

      it("refuses what it cannot do, with reasons", async () => {
        // PrepareApproval: an allowance finer than the token, someone else's agent; a swap's shares the transfer's.
        const created = await ok("POST", "/v1/agents", {
          type: "transfer",
          config: { source: owner.address, destination, amount: 1, token: "USDC", schedule: "daily" },
        });
        const fine = await rest("POST", `/v1/agents/${created.agentId}:prepareApproval`, {
          allowance: 0.0000001,
        });
        expect(fine.status).toBe(400);
        expect(JSON.stringify(fine.json)).toMatch(/allowance.*at most 6 decimal places/);
        const zero = await rest("POST", `/v1/agents/${created.agentId}:prepareApproval`, { allowance: 0 });
        expect(zero.status).toBe(400);
        expect(JSON.stringify(zero.json)).toMatch(/allowance/);
        const missing = await rest("POST", "/v1/agents/nosuchagent00000000000:prepareApproval", {
          allowance: 1,
        });
        expect(missing.status).toBe(404);
        const swap = await ok("POST", "/v1/agents", {
          type: "swap",
          config: {
            wallet: owner.address,
            inputToken: "USDC",
            outputToken: "SOL",
            amount: 1,
            schedule: "daily",
          },
        });
        // A swap spends its input token from its wallet through the same (owner, wallet) delegate: its
        // approval is the transfer's, and the two agents share the allowance.
        const forSwap = await ok("POST", `/v1/agents/${swap.agentId}:prepareApproval`, { allowance: 1 });
        const forTransfer = await ok("POST", `/v1/agents/${created.agentId}:prepareApproval`, {
          allowance: 1,
        });
        expect(forSwap).toMatchObject({ owner: owner.address, mint: USDC, delegate: forTransfer.delegate });
        expect(forSwap.sharedBy).toBe(forTransfer.sharedBy);
        expect(forSwap.sharedBy as number).toBeGreaterThanOrEqual(2);
        // CreateAgent: the destination is the source.
        const same = await rest("POST", "/v1/agents", {
          type: "transfer",
          config: {
            source: owner.address,
            destination: owner.address,
            amount: 1,
            token: "USDC",
            schedule: "daily",
          },
        });
        expect(same.status).toBe(400);
        expect(JSON.stringify(same.json)).toMatch(/config\.destination.*must differ from config\.source/);
      });
    });
  },
);

// Addresses as kit spells them, so a typo in a constant fails loudly here rather than in a run.
address(USDC);

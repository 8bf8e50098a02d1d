/**
 * Issue 53's "a worker crash is untested": the service on its embedded chain with no state file
 * (no LOCAL_SOLANA_STATE), a transfer agent that has run, and the chain's worker killed under it.
 * The chain comes back as it was (the service mirrors what changes, see chain-mirror.ts), not as a
 * new genesis that forgot the owner's wallet: the balances and the approval are the ones the runs
 * left, and the agent's next run succeeds.
 */
import { type Address, generateKeyPairSigner } from "@solana/kit";
import { findAssociatedTokenPda, TOKEN_PROGRAM_ADDRESS } from "@solana-program/token";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadCatalog } from "../src/token/catalog.ts";
import {
  type AgentOnChain,
  fastScheduleEnv,
  startAgentOnChain,
  stopAgentOnChain,
} from "./support/agent-on-chain.ts";
import { until } from "./support/transfer-owner.ts";

const USDC = loadCatalog().tokens.find((t) => t.symbol === "USDC")?.mint as Address;
const SLOT_MS = 3_000;
const FUNDED = 100_000_000n;
const ONE = 1_000_000n;

describe("a chain whose worker is killed, without a state file", () => {
  let onChain: AgentOnChain | undefined;
  beforeAll(async () => {
    onChain = await startAgentOnChain(fastScheduleEnv(SLOT_MS), [[USDC, FUNDED]]);
  });
  afterAll(() => stopAgentOnChain("memory", onChain?.server));

  it.each(["terminate", "error"] as const)(
    "(%s) comes back with the wallets, balances and approvals the agents' runs left, and the next run succeeds",
    async (how) => {
      const { server, chain, owners, owner } = onChain as AgentOnChain;
      const local = server.localChain;
      if (local === undefined) throw new Error("no embedded chain");
      const ata = async (wallet: Address) =>
        (await findAssociatedTokenPda({ owner: wallet, mint: USDC, tokenProgram: TOKEN_PROGRAM_ADDRESS }))[0];
      const recipient = await generateKeyPairSigner();
      await chain.setTokenBalance(recipient.address, USDC, 0n);
      const source = await ata(owner.address);
      const destination = await ata(recipient.address);
      const sourceBefore = await owners.balance(source);
      const agentId = await owners.createTransfer({
        source: owner.address,
        destination: recipient.address,
        amount: 1,
        token: "USDC",
      });
      const { delegate } = await owners.approve(agentId, 50, owner);
      const succeeded = async () =>
        (await owners.runsOf(agentId)).filter((r) => r.outcome === "succeeded").length;
      await until(
        async () => ((await succeeded()) >= 1 ? true : undefined),
        3 * SLOT_MS + 15_000,
        "a first run",
      );

      // A local pool's vault moved since the chain started (as swaps move them): the pools come
      // back as they were, not seeded anew.
      const [vault] = (await chain.rpc.getTokenLargestAccounts(USDC).send()).value;
      if (vault === undefined) throw new Error("no USDC account on the chain");
      const moved = BigInt(vault.amount) - 12_345n;
      const raw = (await chain.rpc.getAccountInfo(vault.address, { encoding: "base64" }).send()).value;
      if (raw === null) throw new Error("no vault account");
      const data = Buffer.from(raw.data[0], "base64");
      // An SPL Token account's amount: a u64 after its mint and owner.
      data.writeBigUInt64LE(moved, 64);
      const set = await chain.raw("surfnet_setAccount", [vault.address, { data: data.toString("hex") }]);
      expect(set.error).toBeUndefined();
      expect(await owners.balance(vault.address)).toBe(moved);
      // The service hears of a change 20 ms after it (MIRROR_DELAY_MS): what a crash within that
      // window loses is documented. Past it, the change must come back.
      await new Promise((resolve) => setTimeout(resolve, 200));

      // Killed while the agent runs on: its next slots meet the restart, or the chain back.
      await local.crash(how);
      expect(local.available).toBe(false);
      await local.ready();

      // The agent runs on the chain that came back: a run succeeds after the crash.
      const before = await succeeded();
      await until(
        async () => ((await succeeded()) > before ? true : undefined),
        3 * SLOT_MS + 15_000,
        "a run after the restart",
      );
      expect((await owners.ok("GET", `/v1/agents/${agentId}`)).status).toBe("active");
      // Every run recorded succeeded is on the chain, no more: balances and allowance agree.
      const runs = await owners.pauseSettled(
        agentId,
        async (n) =>
          (await owners.balance(source)) === sourceBefore - BigInt(n) * ONE &&
          (await owners.balance(destination)) === BigInt(n) * ONE,
      );
      expect(runs).toBeGreaterThanOrEqual(2);
      const account = await owners.tokenAccount(source);
      expect(account).toMatchObject({
        owner: owner.address,
        delegate,
        delegatedAmount: { amount: String(50n * ONE - BigInt(runs) * ONE) },
      });
      expect(await owners.balance(vault.address)).toBe(moved);
      // The owner's own lamports too: the wallet the chain came back with is the owner's.
      expect((await chain.rpc.getBalance(owner.address).send()).value).toBeGreaterThan(0n);
      expect(
        server.logs.find((l) => String(l.msg).includes("restored from the service's mirror")),
      ).toBeDefined();
      await owners.ok("DELETE", `/v1/agents/${agentId}`);
    },
    120_000,
  );
});

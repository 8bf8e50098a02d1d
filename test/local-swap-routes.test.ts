/**
 * Swap agents on the embedded chain with JUPITER_SWAP_URL unset: routes come from the chain's own
 * local pools, served in-process through the same /build contract and checks as Jupiter's. A
 * funded wallet approves a swap agent, which swaps three times; the wallet's balances move by
 * exactly the amounts and the quoted outputs, and every transaction is signed by the executor, the
 * delegate and the run's taker alone. GetAgent and CreateAgent say these are local pools, not Jupiter. And the
 * route source itself answers for any taker, signed by the taker alone, with token instructions only.
 */
import { randomBytes } from "node:crypto";
import { type Address, getAddressDecoder } from "@solana/kit";
import { findAssociatedTokenPda, TOKEN_PROGRAM_ADDRESS } from "@solana-program/token";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../src/config.ts";
import { createEmbeddedSwapRoutes, LOCAL_ROUTE_LABEL, localPools } from "../src/local-chain/index.ts";
import { loadCatalog } from "../src/token/catalog.ts";
import {
  type AgentOnChain,
  expectLandedAsRecorded,
  fastScheduleEnv,
  startAgentOnChain,
  stopAgentOnChain,
} from "./support/agent-on-chain.ts";
import type { ChainClient } from "./support/chain-client.ts";
import type { RunningServer } from "./support/start-server.ts";
import { type Json, until } from "./support/transfer-owner.ts";

const catalog = loadCatalog();
const USDC = catalog.tokens.find((t) => t.symbol === "USDC")?.mint as Address;
const JUP = catalog.tokens.find((t) => t.symbol === "JUP")?.mint as Address;
const SLOT_MS = 3_000;
const AMOUNT_UNITS = 1_500_000n;
const START_USDC = 100_000_000n;

const ata = async (wallet: string, mint: Address) =>
  (await findAssociatedTokenPda({ owner: wallet as Address, mint, tokenProgram: TOKEN_PROGRAM_ADDRESS }))[0];

describe("local swap routes on the embedded chain (JUPITER_SWAP_URL unset)", () => {
  let server: RunningServer;
  let chain: ChainClient;
  let owners: AgentOnChain["owners"];
  let owner: AgentOnChain["owner"];

  beforeAll(async () => {
    ({ server, chain, owners, owner } = await startAgentOnChain(
      { ...fastScheduleEnv(SLOT_MS), SCHEDULER_RETRY_MAX_MS: "200" },
      [[USDC, START_USDC]],
    ));
  });
  afterAll(async () => {
    await stopAgentOnChain("memory", server);
  });

  it("a swap agent swaps three times through the local pools, balances moving by exactly the amounts and quoted outputs", async () => {
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
    expect(created.notice).toMatch(/local pools on the embedded development chain, not Jupiter/);
    expect(created.notice).toMatch(/JUPITER_SWAP_URL/);
    const agentId = created.agentId as string;
    const pending = await owners.ok("GET", `/v1/agents/${agentId}`);
    expect(pending.notice).toBe(created.notice);
    const executor = (await owners.ok("GET", "/v1/executor")).address as string;
    const approval = await owners.approve(agentId, 4.5, owner);
    const runs = await until(
      async () => {
        const done = (await owners.runsOf(agentId)).filter((r) => r.outcome === "succeeded");
        return done.length >= 3 ? done : undefined;
      },
      10 * SLOT_MS + 20_000,
      "three swaps through the local pools",
    );
    await until(
      async () => ((await owners.ok("GET", `/v1/agents/${agentId}`)).status === "failed" ? true : undefined),
      6 * SLOT_MS + 10_000,
      "the agent fails once the 4.5 USDC allowance is spent",
    ).catch(() => owners.ok("POST", `/v1/agents/${agentId}:pause`));
    const succeeded = (await owners.runsOf(agentId)).filter((r) => r.outcome === "succeeded");
    expect(succeeded).toHaveLength(3);
    let out = 0n;
    for (const run of runs) {
      const result = run.result as Json;
      expect(result).toMatchObject({ kind: "swap", simulated: false, inAmountUnits: "1500000" });
      expect(result.routeLabels).toEqual([LOCAL_ROUTE_LABEL]);
      out += BigInt(result.outAmountUnits as string);
      await expectLandedAsRecorded(chain, result, {
        executor,
        delegate: approval.delegate as string,
        taker: result.taker as string,
      });
    }
    // About 1/0.8734 JUP per USDC, less the 0.3% fee: the catalog's price.
    expect(Number(out) / 1e6 / 4.5).toBeGreaterThan(1.13);
    expect(Number(out) / 1e6 / 4.5).toBeLessThan(1.15);
    expect(await owners.balance(await ata(owner.address, USDC))).toBe(START_USDC - 3n * AMOUNT_UNITS);
    expect(await owners.balance(await ata(owner.address, JUP))).toBe(out);
    const active = await owners.ok("GET", `/v1/agents/${agentId}`);
    expect(active.notice).toMatch(/not Jupiter/);
  }, 120_000);

  it("answers /build for any taker, signed by that taker alone, with SPL Token instructions only", async () => {
    const routes = createEmbeddedSwapRoutes({
      transport: server.localChain?.transport as NonNullable<RunningServer["localChain"]>["transport"],
      pools: await localPools(
        catalog,
        server.localChain?.keys as NonNullable<RunningServer["localChain"]>["keys"],
      ),
    });
    const taker = getAddressDecoder().decode(randomBytes(32));
    const payer = getAddressDecoder().decode(randomBytes(32));
    const destination = getAddressDecoder().decode(randomBytes(32));
    const answer = await routes.build(
      new URLSearchParams({
        inputMint: USDC,
        outputMint: JUP,
        amount: "1000000",
        taker,
        payer,
        destinationTokenAccount: destination,
        slippageBps: "50",
      }),
    );
    expect(answer.status).toBe(200);
    const body = answer.body as Json;
    const instructions = [body.swapInstruction, body.cleanupInstruction] as Json[];
    for (const instruction of instructions) {
      expect(instruction.programId).toBe(TOKEN_PROGRAM_ADDRESS);
      const signers = (instruction.accounts as Json[]).filter((a) => a.isSigner).map((a) => a.pubkey);
      expect(signers).toEqual([taker]);
    }
    expect(body.setupInstructions).toEqual([]);
    expect(body.otherInstructions).toEqual([]);
    // The payout's vault lets this taker move exactly the quoted amount: the pool's key approved it.
    const vault = ((body.cleanupInstruction as Json).accounts as Json[])[0]?.pubkey as Address;
    const { result: read } = (await chain.raw("getAccountInfo", [vault, { encoding: "jsonParsed" }])) as {
      result: {
        value: { data: { parsed: { info: { delegate: string; delegatedAmount: { amount: string } } } } };
      };
    };
    expect(read.value.data.parsed.info.delegate).toBe(taker);
    expect(read.value.data.parsed.info.delegatedAmount.amount).toBe(body.outAmount);
    const none = await routes.build(
      new URLSearchParams({
        inputMint: JUP,
        outputMint: getAddressDecoder().decode(randomBytes(32)),
        amount: "1000000",
        taker,
        payer,
        destinationTokenAccount: destination,
      }),
    );
    expect(none).toMatchObject({ status: 400, body: { errorCode: "COULD_NOT_FIND_ANY_ROUTE" } });
  });
});

describe("which routes the configuration picks", () => {
  it("local pools on the embedded chain with JUPITER_SWAP_URL unset; Jupiter against a cluster or when set", () => {
    expect(loadConfig({}).swaps.localRoutes).toBe(true);
    const cluster = loadConfig({ SOLANA_RPC_URL: "http://127.0.0.1:1", TRANSFER_EXECUTOR: "simulated" });
    expect(cluster.swaps.localRoutes).toBe(false);
    expect(cluster.swaps.jupiterSwapUrl).toBe("https://api.jup.ag/swap/v2");
    const given = loadConfig({ JUPITER_SWAP_URL: "http://127.0.0.1:9/swap/v2" });
    expect(given.swaps).toMatchObject({ localRoutes: false, jupiterSwapUrl: "http://127.0.0.1:9/swap/v2" });
  });
});

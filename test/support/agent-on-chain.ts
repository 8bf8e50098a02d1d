/**
 * The setup the agent tests that move real tokens share (transfer-agent and swap-agent
 * .test.ts): the service with its scheduler at test speed on the embedded local chain, on the
 * memory store and on MongoDB (FerretDB), an owner's wallet funded there, the check that a
 * run's transaction landed as its run recorded it, and what follows the owner's revoke. One setup, so that transfers and swaps are
 * tried under the same schedule and counted on chain the same way; each test keeps its agents,
 * its own settings and what it checks of them.
 */
import { randomBytes } from "node:crypto";
import { type Address, generateKeyPairSigner, type KeyPairSigner, type Signature } from "@solana/kit";
import { expect, inject } from "vitest";
import { type ChainClient, createChainClient } from "./chain-client.ts";
import { type RunningServer, startServer } from "./start-server.ts";
import { createTransferOwner, type Json, until } from "./transfer-owner.ts";

/**
 * The stores an agent test runs on, for describe.each: memory, and MongoDB in a database of its
 * own, `<dbPrefix>_<random>`.
 */
export function agentStores(dbPrefix: string): [string, () => Record<string, string>][] {
  return [
    ["memory", () => ({})],
    [
      "mongo",
      () => ({
        MONGODB_URI: inject("mongoUri"),
        MONGODB_DB: `${dbPrefix}_${randomBytes(3).toString("hex")}`,
      }),
    ],
  ];
}

/**
 * The scheduler at test speed: an hourly slot every `slotMs` of real time, polled and retried
 * every 100 ms, and an agent failed after two failed slots in a row.
 */
export function fastScheduleEnv(slotMs: number): Record<string, string> {
  return {
    SCHEDULER_ENABLED: "true",
    SCHEDULE_TIME_SCALE: String(3_600_000 / slotMs),
    SCHEDULER_POLL_INTERVAL_MS: "100",
    SCHEDULER_RETRY_BASE_MS: "100",
    SCHEDULER_MAX_CONSECUTIVE_FAILURES: "2",
  };
}

/** The service, its embedded chain, and an owner with a funded wallet there. */
export interface AgentOnChain {
  readonly server: RunningServer;
  readonly chain: ChainClient;
  /** The owner's side: REST, approvals its wallet signs, the chain's view of token accounts. */
  readonly owners: ReturnType<typeof createTransferOwner>;
  /** The owner's wallet: 1 SOL for its fees, and `funds` on chain. */
  readonly owner: KeyPairSigner;
}

/**
 * Starts the service with `env` on its embedded local chain, and funds a new owner's wallet there
 * with 1 SOL and, for each of `funds`, that many base units of the mint.
 */
export async function startAgentOnChain(
  env: Record<string, string>,
  funds: readonly [mint: Address, units: bigint][],
): Promise<AgentOnChain> {
  const server = await startServer({ env });
  const chain = createChainClient(server.localChain?.url as string);
  const owners = createTransferOwner({ baseUrl: server.baseUrl, chain });
  const owner = await generateKeyPairSigner();
  await chain.airdrop(owner.address, 1n);
  for (const [mint, units] of funds) await chain.setTokenBalance(owner.address, mint, units);
  return { server, chain, owners, owner };
}

/** Drops the test's database (on the mongo store) and closes the service. */
export async function stopAgentOnChain(storeName: string, server: RunningServer | undefined): Promise<void> {
  if (storeName === "mongo") {
    await server?.context.mongoClient?.db(server.context.config.mongo?.dbName).dropDatabase();
  }
  await server?.close();
}

/**
 * A succeeded run's transaction as the chain has it: it landed without error, at the slot and for
 * the fee its run recorded, signed by two keys only: the executor as fee payer, and the owner's
 * delegate (the token authority); the owner's key was never needed. Resolves with it for more.
 */
export async function expectLandedAsRecorded(
  chain: ChainClient,
  result: Json,
  signers: { executor: string; delegate: string; taker?: string },
) {
  const landed = await chain.rpc
    .getTransaction(result.signature as Signature, {
      encoding: "json",
      maxSupportedTransactionVersion: 0,
      commitment: "confirmed",
    })
    .send();
  expect(landed?.meta?.err).toBeNull();
  expect(Number(landed?.slot)).toBe(result.slot);
  expect(Number(landed?.meta?.fee)).toBe(result.fee);
  // A swap's run taker signs too (after the fee payer; kit orders the read-only signers its own way).
  const expected = [
    signers.executor,
    signers.delegate,
    ...(signers.taker === undefined ? [] : [signers.taker]),
  ];
  const keys = landed?.transaction.message.accountKeys ?? [];
  expect(keys[0]).toBe(signers.executor);
  expect(keys.slice(0, expected.length).slice().sort()).toEqual(expected.slice().sort());
  expect(landed?.transaction.signatures).toHaveLength(expected.length);
  expect(landed?.transaction.message.header.numRequiredSignatures).toBe(expected.length);
  return landed;
}

/**
 * After the owner revoked the agent's allowance: ResumeAgent, then the next runs fail naming the
 * allowance, each at its one attempt (no retry mends it), and then the agent fails (after two in a
 * row, see fastScheduleEnv). Resolves with the failed runs.
 */
export async function expectFailedAfterRevoke(
  owners: AgentOnChain["owners"],
  agentId: string,
  slotMs: number,
): Promise<Json[]> {
  await owners.ok("POST", `/v1/agents/${agentId}:resume`);
  const failed = await until(
    async () => {
      const agent = await owners.ok("GET", `/v1/agents/${agentId}`);
      return agent.status === "failed" ? agent : undefined;
    },
    4 * slotMs + 10_000,
    "the agent failed",
  );
  expect(failed.failureReason).toMatch(/allowance/);
  const failures = (await owners.runsOf(agentId)).filter((r) => r.outcome === "failed");
  expect(failures.length).toBeGreaterThanOrEqual(2);
  for (const run of failures) expect(run.error).toMatch(/no allowance.*delegate/);
  // A reason no retry mends fails its slot at once: one attempt per failed slot.
  expect(failures.every((r) => r.attempt === 1)).toBe(true);
  return failures;
}

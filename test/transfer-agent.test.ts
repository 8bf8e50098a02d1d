/**
 * A transfer agent as its owner uses it, on the embedded local chain, on the memory store and on
 * MongoDB (FerretDB): a funded wallet, an agent created over REST, the PrepareApproval transaction
 * signed by the wallet with @solana/kit and sent, three slots that move exactly three amounts
 * (the chain's balances and transactions say so, not the service), a revoke that fails the next
 * run with a reason naming the allowance and then the agent, and a new approval that lets it run
 * again after ResumeAgent. Schedule time runs 1200 times faster: an hourly agent runs every 3 s.
 */
import { randomBytes } from "node:crypto";
import {
  type Address,
  address,
  generateKeyPairSigner,
  getBase64EncodedWireTransaction,
  getBase64Encoder,
  getTransactionDecoder,
  type KeyPairSigner,
  type Signature,
  signTransaction,
} from "@solana/kit";
import { findAssociatedTokenPda, getRevokeInstruction, TOKEN_PROGRAM_ADDRESS } from "@solana-program/token";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { loadCatalog } from "../src/token/catalog.ts";
import { type ChainClient, createChainClient } from "./support/chain-client.ts";
import { type RunningServer, startServer } from "./support/start-server.ts";

const USDC = loadCatalog().tokens.find((t) => t.symbol === "USDC")?.mint as Address;
const AMOUNT = 1.1; // 1100000 base units, never 1099999
const AMOUNT_UNITS = 1_100_000n;
const SLOT_MS = 3_000;

const ENV = {
  SCHEDULER_ENABLED: "true",
  SCHEDULE_TIME_SCALE: String(3_600_000 / SLOT_MS),
  SCHEDULER_POLL_INTERVAL_MS: "100",
  SCHEDULER_RETRY_BASE_MS: "100",
  SCHEDULER_MAX_CONSECUTIVE_FAILURES: "2",
  // The default cap per run (1000 USD) and a cap per day one run of 600 USD fits under, two do not.
  TRANSFER_MAX_USD_PER_DAY: "1000",
};

const STORES: [string, () => Record<string, string>][] = [
  ["memory", () => ({})],
  [
    "mongo",
    () => ({
      MONGODB_URI: inject("mongoUri"),
      MONGODB_DB: `transfer_test_${randomBytes(3).toString("hex")}`,
    }),
  ],
];

type Json = Record<string, unknown>;

describe.each(STORES)("a transfer agent on the %s store moves real tokens", (storeName, storeEnv) => {
  let server: RunningServer;
  let chain: ChainClient;
  let owner: KeyPairSigner;
  let destination: Address;
  let ownerAccount: Address;
  let destinationAccount: Address;

  /** REST, as a user's script calls it: JSON in, JSON out, the HTTP status kept. */
  const rest = async (
    method: string,
    path: string,
    body?: object,
  ): Promise<{ status: number; json: Json }> => {
    const res = await fetch(`${server.baseUrl}${path}`, {
      method,
      headers: body === undefined ? {} : { "content-type": "application/json" },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: res.status, json: (await res.json()) as Json };
  };
  const ok = async (method: string, path: string, body?: object): Promise<Json> => {
    const { status, json } = await rest(method, path, body);
    if (status !== 200) throw new Error(`${method} ${path}: HTTP ${status} ${JSON.stringify(json)}`);
    return json.data as Json;
  };
  /** A token account as the chain's jsonParsed encoding shows it; undefined when it does not exist. */
  const tokenAccount = async (account: Address): Promise<Json | undefined> => {
    const { value } = await chain.rpc.getAccountInfo(account, { encoding: "jsonParsed" }).send();
    return value === null ? undefined : (value.data as { parsed: { info: Json } }).parsed.info;
  };
  const balance = async (account: Address): Promise<bigint> => {
    const info = await tokenAccount(account);
    return info === undefined ? 0n : BigInt((info.tokenAmount as { amount: string }).amount);
  };
  /** PrepareApproval, signed by the owner's wallet with kit and sent; resolves once confirmed. */
  const approve = async (agentId: string, allowance: number): Promise<Json> => {
    const approval = await ok("POST", `/v1/agents/${agentId}:prepareApproval`, { allowance });
    const unsigned = getTransactionDecoder().decode(
      getBase64Encoder().encode(approval.transaction as string),
    );
    // The wallet's own key signs: kit's signTransaction over the decoded wire transaction.
    const transaction = await signTransaction([owner.keyPair], unsigned);
    const signature = await chain.rpc
      .sendTransaction(getBase64EncodedWireTransaction(transaction), { encoding: "base64" })
      .send();
    const status = await chain.confirm(signature);
    expect(status.err).toBeNull();
    return approval;
  };
  const runsOf = async (agentId: string): Promise<Json[]> =>
    (await ok("GET", `/v1/agents/${agentId}/runs?limit=100`)).runs as Json[];
  const until = async <T>(probe: () => Promise<T | undefined>, ms: number, what: string): Promise<T> => {
    const deadline = performance.now() + ms;
    for (;;) {
      const value = await probe();
      if (value !== undefined) return value;
      if (performance.now() > deadline) throw new Error(`not within ${ms} ms: ${what}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  };

  beforeAll(async () => {
    server = await startServer({ env: { ...ENV, ...storeEnv() } });
    chain = createChainClient(server.localChain?.url as string);
    // 1. A wallet funded on the local chain: SOL for its fees, 100 USDC in its token account.
    owner = await generateKeyPairSigner();
    destination = (await generateKeyPairSigner()).address;
    await chain.airdrop(owner.address, 1n);
    await chain.setTokenBalance(owner.address, USDC, 100_000_000n);
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

  afterAll(async () => {
    if (storeName === "mongo") {
      await server?.context.mongoClient?.db(server.context.config.mongo?.dbName).dropDatabase();
    }
    await server?.close();
  });

  it("approve, three slots, revoke, failed, approve again, resume", async () => {
    const executor = (await ok("GET", "/v1/executor")).address as string;

    // 2 and 3. An agent over REST, then the approval its owner signs before its first slot.
    const created = await ok("POST", "/v1/agents", {
      type: "transfer",
      config: { source: owner.address, destination, amount: AMOUNT, token: "usdc", schedule: "hourly" },
    });
    const agentId = created.agentId as string;
    const approval = await approve(agentId, 5.5);
    expect(approval).toMatchObject({
      owner: owner.address,
      delegate: executor,
      mint: USDC,
      tokenAccount: ownerAccount,
      allowance: "5500000",
      decimals: 6,
    });
    expect(await tokenAccount(ownerAccount)).toMatchObject({
      delegate: executor,
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
      // The executor signed, as fee payer and delegate; the owner's key was never needed.
      expect(landed?.transaction.message.accountKeys[0]).toBe(executor);
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
    await ok("POST", `/v1/agents/${agentId}:resume`);
    const failed = await until(
      async () => {
        const agent = await ok("GET", `/v1/agents/${agentId}`);
        return agent.status === "failed" ? agent : undefined;
      },
      4 * SLOT_MS + 10_000,
      "the agent failed",
    );
    expect(failed.failureReason).toMatch(/allowance/);
    const failures = (await runsOf(agentId)).filter((r) => r.outcome === "failed");
    expect(failures.length).toBeGreaterThanOrEqual(2);
    for (const run of failures) expect(run.error).toMatch(/no allowance.*executor/);
    // A reason no retry mends fails its slot at once: one attempt per failed slot.
    expect(failures.every((r) => r.attempt === 1)).toBe(true);
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
    await ok("POST", `/v1/agents/${agentId}:pause`);
    const after = (await runsOf(agentId)).filter((r) => r.outcome === "succeeded").length;
    expect(await balance(destinationAccount)).toBe(BigInt(after) * AMOUNT_UNITS);
  });

  it("fails a slot at once, with the chain's reason and both figures, when no retry can mend it", async () => {
    const executor = (await ok("GET", "/v1/executor")).address as string;
    /** A source wallet whose USDC account the cheatcode sets as `account` says (none: no account). */
    const wallet = async (account?: Record<string, unknown>): Promise<Address> => {
      const source = (await generateKeyPairSigner()).address;
      if (account !== undefined) {
        const response = await chain.raw("surfnet_setTokenAccount", [source, USDC, account]);
        expect(response.error).toBeUndefined();
      }
      return source;
    };
    const cases: { name: string; source: Address; amount: number; reason: RegExp }[] = [
      {
        name: "allowance below the amount",
        source: await wallet({ amount: 5_000_000, delegate: executor, delegatedAmount: 500_000 }),
        amount: AMOUNT,
        reason: /the allowance \(0\.5 USDC\) is below the amount to move \(1\.1 USDC\)/,
      },
      {
        name: "insufficient balance",
        source: await wallet({ amount: 500_000, delegate: executor, delegatedAmount: 5_000_000 }),
        amount: AMOUNT,
        reason: /insufficient balance: the source holds 0\.5 USDC, the run moves 1\.1 USDC/,
      },
      {
        name: "frozen account",
        source: await wallet({
          amount: 5_000_000,
          delegate: executor,
          delegatedAmount: 5_000_000,
          state: "frozen",
        }),
        amount: AMOUNT,
        reason: /the source's USDC account is frozen/,
      },
      {
        name: "no source account",
        source: await wallet(),
        amount: AMOUNT,
        reason: /the source wallet has no USDC account/,
      },
      {
        name: "over the cap per run",
        source: await wallet({ amount: 5_000_000_000, delegate: executor, delegatedAmount: 5_000_000_000 }),
        amount: 2000,
        reason: /2000 USDC \(\d+\.\d\d USD\) is over the cap of 1000 USD per run/,
      },
    ];
    const agents = await Promise.all(
      cases.map(async (c) => {
        const created = await ok("POST", "/v1/agents", {
          type: "transfer",
          config: { source: c.source, destination, amount: c.amount, token: "USDC", schedule: "hourly" },
        });
        return created.agentId as string;
      }),
    );
    for (const [i, agentId] of agents.entries()) {
      const c = cases[i] as (typeof cases)[number];
      const [run] = await until(
        async () => {
          const runs = await runsOf(agentId);
          return runs.length > 0 ? runs : undefined;
        },
        2 * SLOT_MS + 10_000,
        `a run of the agent with ${c.name}`,
      );
      expect(run, c.name).toMatchObject({ outcome: "failed", attempt: 1 });
      expect(run?.error, c.name).toMatch(c.reason);
      await ok("DELETE", `/v1/agents/${agentId}`);
    }
  });

  it("fails the run that would pass the cap per day, with both figures, after the day's runs under it", async () => {
    const executor = (await ok("GET", "/v1/executor")).address as string;
    const source = (await generateKeyPairSigner()).address;
    const funded = await chain.raw("surfnet_setTokenAccount", [
      source,
      USDC,
      { amount: 5_000_000_000, delegate: executor, delegatedAmount: 5_000_000_000 },
    ]);
    expect(funded.error).toBeUndefined();
    const created = await ok("POST", "/v1/agents", {
      type: "transfer",
      config: { source, destination, amount: 600, token: "USDC", schedule: "hourly" },
    });
    const agentId = created.agentId as string;
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
    // PrepareApproval: an allowance finer than the token, a swap agent, someone else's agent.
    const created = await ok("POST", "/v1/agents", {
      type: "transfer",
      config: { source: owner.address, destination, amount: 1, token: "USDC", schedule: "daily" },
    });
    const fine = await rest("POST", `/v1/agents/${created.agentId}:prepareApproval`, {
      allowance: 0.0000001,
    });
    expect(fine.status).toBe(400);
    expect(JSON.stringify(fine.json)).toMatch(/allowance.*smallest units/);
    const zero = await rest("POST", `/v1/agents/${created.agentId}:prepareApproval`, { allowance: 0 });
    expect(zero.status).toBe(400);
    expect(JSON.stringify(zero.json)).toMatch(/allowance/);
    const missing = await rest("POST", "/v1/agents/nosuchagent00000000000:prepareApproval", { allowance: 1 });
    expect(missing.status).toBe(404);
    const swap = await ok("POST", "/v1/agents", {
      type: "swap",
      config: { wallet: owner.address, inputToken: "USDC", outputToken: "SOL", amount: 1, schedule: "daily" },
    });
    const notTransfer = await rest("POST", `/v1/agents/${swap.agentId}:prepareApproval`, { allowance: 1 });
    expect(notTransfer.status).toBe(400);
    expect(JSON.stringify(notTransfer.json)).toMatch(/swap agent/);
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

// Addresses as kit spells them, so a typo in a constant fails loudly here rather than in a run.
address(USDC);

/**
 * Trigger orders fire exactly once across replicas: three service replicas (`src/main.ts`) share
 * `npm run local-chain`, one database (FerretDB), one Jupiter-shaped Price API the test moves
 * (support/fake-jupiter.ts) and the Jupiter-shaped Swap API, with a USDC/JUP pool per order on
 * that chain. ORDERS stop-loss orders (sell 20 JUP below 0.45 USD) are created over REST on one
 * replica; every replica reads them into its own book (TRIGGER_REFRESH_MS) and polls the price
 * every 50 ms, so once the price falls through the stops all three confirm every order within a
 * few polls of each other, and race to fire it.
 *
 * Each wallet has approved its order's delegate for several amounts, not one: a second fill of an
 * order would land on chain and be counted, not be refused by the token program. Counted
 * afterwards straight from the chain: each owner's input account changed in exactly one
 * transaction, by exactly one amount, and that transaction is the one its succeeded run recorded;
 * every order is `completed` with one run; the event log holds one `trigger.fired` per order.
 * The race is real: with the watch's condition "no firing kept yet" taken out of its versioned
 * update (trigger-watch.ts), this test saw 29 fills on chain for 10 orders, 29 trigger.fired.
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Address, generateKeyPairSigner, type Signature } from "@solana/kit";
import { findAssociatedTokenPda, TOKEN_PROGRAM_ADDRESS } from "@solana-program/token";
import { MongoClient } from "mongodb";
import { afterAll, expect, inject, it } from "vitest";
import { loadCatalog } from "../src/token/catalog.ts";
import { DOC_PRICES, type FakeJupiter, type FakePrice, startFakeJupiter } from "./support/fake-jupiter.ts";
import { startJupiterSwapServer } from "./support/jupiter-swap-server.ts";
import { type MainProcess, startMain } from "./support/main-process.ts";
import { startReplicaChain } from "./support/replica-kills.ts";

const ORDERS = 10;
const REPLICAS = 3;
const TOKENS = loadCatalog().tokens;
const mintOf = (symbol: string) => TOKENS.find((t) => t.symbol === symbol)?.mint as Address;
const USDC = mintOf("USDC");
const JUP = mintOf("JUP");
/** 20 JUP an order: 10 USD at 0.5, above TRIGGER_MIN_USD. */
const AMOUNT = 20;
const AMOUNT_UNITS = 20_000_000n;
/** What each wallet holds and has approved: five orders' worth, so that a second fill would land. */
const START_UNITS = 5n * AMOUNT_UNITS;
const STOP_USD = 0.45;

const uri = inject("mongoUri");
const dbName = `trigger_replicas_${randomBytes(3).toString("hex")}`;
const directory = mkdtempSync(join(tmpdir(), "trigger-replicas-"));
const processes: MainProcess[] = [];
const client = new MongoClient(uri, { serverSelectionTimeoutMS: 2000 });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));

let prices: FakeJupiter | undefined;
let closeJupiter: (() => Promise<void>) | undefined;

afterAll(async () => {
  for (const p of processes) p.kill();
  await closeJupiter?.();
  await prices?.close();
  await client.db(dbName).dropDatabase();
  await client.close();
  rmSync(directory, { recursive: true, force: true });
});

const priced = (usdPrice: number): FakePrice => ({
  ...(DOC_PRICES.EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v as FakePrice),
  usdPrice,
});

/** Polls `probe` every 200 ms until it answers something, for at most `ms`. */
async function until<T>(probe: () => Promise<T | undefined>, ms: number, what: string): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const found = await probe();
    if (found !== undefined) return found;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms`);
    await sleep(200);
  }
}

/** A counter or gauge of a replica's /metrics, summed over its label sets. */
async function metric(port: number, name: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  return text
    .split("\n")
    .filter((line) => line.startsWith(`${name} `) || line.startsWith(`${name}{`))
    .reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(" ") + 1)), 0);
}

it("three replicas watching the same stop-loss orders: the price falls through them, and each fills exactly once", async () => {
  const replicaChain = await startReplicaChain(directory, processes);
  const { rpcUrl, chain } = replicaChain;
  prices = await startFakeJupiter();
  const fake = prices;
  fake.prices.set(USDC, priced(1));
  fake.prices.set(JUP, priced(0.5));

  // A pool per order (each owner's USDC account gets its own: a pool's output vault has one
  // delegate at a time), 0.5 USDC per JUP, deep enough that one fill barely moves it.
  const jupiter = await startJupiterSwapServer({
    rpcUrl,
    pools: Array.from({ length: ORDERS }, () => ({
      mintA: USDC,
      mintB: JUP,
      reserveA: 1_000_000_000_000n,
      reserveB: 2_000_000_000_000n,
    })),
    poolPerTaker: true,
  });
  closeJupiter = jupiter.close;

  // Wallets hold JUP, approved to their order's delegate (anonymous, wallet) by cheatcode as the
  // owners' approvals would, and an empty USDC account, as the approval's transaction makes it.
  const wallets = await Promise.all(
    Array.from({ length: ORDERS }, async () => {
      const wallet = (await generateKeyPairSigner()).address;
      const [input] = await findAssociatedTokenPda({
        owner: wallet,
        mint: JUP,
        tokenProgram: TOKEN_PROGRAM_ADDRESS,
      });
      return { wallet, input };
    }),
  );
  for (const { wallet } of wallets) {
    await replicaChain.fundApproved(wallet, JUP, START_UNITS);
    await chain.setTokenBalance(wallet, USDC, 0n);
  }

  const env: Record<string, string> = {
    MONGODB_URI: uri,
    MONGODB_DB: dbName,
    SOLANA_RPC_URL: rpcUrl,
    EXECUTOR_KEYPAIR: replicaChain.keypairPath,
    DELEGATE_SEED: replicaChain.seedPath,
    // The test's callers have no keys: every order is anonymous's.
    ALLOW_ANONYMOUS_TRANSFERS: "true",
    JUPITER_API_URL: fake.url,
    JUPITER_SWAP_URL: jupiter.url,
    PRICE_TTL_MS: "100",
    PRICE_MAX_STALE_MS: "300000",
    PRICE_WATCH_INTERVAL_MS: "50",
    TRIGGER_CONFIRMATIONS: "2",
    TRIGGER_HOLD_MS: "200",
    TRIGGER_REFRESH_MS: "200",
    SCHEDULER_POLL_INTERVAL_MS: "250",
    SCHEDULER_RETRY_BASE_MS: "50",
    SCHEDULER_RETRY_MAX_MS: "500",
    SHUTDOWN_TIMEOUT_MS: "5000",
  };
  const replicas = await Promise.all(Array.from({ length: REPLICAS }, () => startMain(env)));
  processes.push(...replicas);
  const [creator] = replicas as [MainProcess & { port: number }];

  const expiresAt = new Date(Date.now() + 30 * 60_000).toISOString();
  const agentIds: string[] = [];
  for (const [i, { wallet }] of wallets.entries()) {
    const res = await fetch(`http://127.0.0.1:${creator.port}/v1/agents`, {
      method: "POST",
      headers: { "content-type": "application/json", "idempotency-key": `trigger-replicas-${i}` },
      body: JSON.stringify({
        type: "trigger",
        config: {
          wallet,
          inputToken: "JUP",
          outputToken: "USDC",
          amount: AMOUNT,
          triggerCondition: "below",
          triggerPriceUsd: STOP_USD,
          expiresAt,
        },
      }),
    });
    const json = (await res.json()) as { data: { agentId: string } };
    expect(res.status, JSON.stringify(json)).toBe(200);
    agentIds.push(json.data.agentId);
  }

  const db = client.db(dbName);
  const agents = db.collection<{
    _id: string;
    status: string;
    state?: { firing?: { firedAt: string; observations: { at: string }[] } };
  }>("agents");
  await until(
    async () => ((await agents.countDocuments({ status: "active" })) === ORDERS ? true : undefined),
    60_000,
    "every order active (its approval seen)",
  );
  // Every replica watches every order: its book holds a leg of each.
  await until(
    async () => {
      const legs = await Promise.all(replicas.map((r) => metric(r.port, "trigger_legs_watched")));
      return legs.every((n) => n === ORDERS) ? legs : undefined;
    },
    20_000,
    "every replica's book holding every order",
  );
  // Nothing fired above the stops.
  await sleep(1_000);
  expect(await db.collection("agent_runs").countDocuments({ agentId: { $exists: true } })).toBe(0);

  // Through the stops, for every replica at once.
  fake.prices.set(JUP, priced(0.4));
  await until(
    async () => ((await agents.countDocuments({ status: "completed" })) === ORDERS ? true : undefined),
    60_000,
    "every order completed",
  );
  // A second firing would come within a few polls and refreshes of the first: time for one to
  // land, then nothing in flight while the chain is counted.
  await sleep(3_000);
  const firedHere = await Promise.all(replicas.map((r) => metric(r.port, "trigger_orders_fired_total")));
  for (const replica of replicas) replica.child.kill("SIGTERM");
  for (const replica of replicas) expect((await replica.exited).code).toBe(0);

  const runs = await db
    .collection<{ agentId: string; outcome: string; result?: { signature?: string; leg?: string } }>(
      "agent_runs",
    )
    // Runs only: the collection also holds the fences of lease generations, without an agentId.
    .find({ agentId: { $exists: true } })
    .toArray();
  const fired = await db
    .collection<{ agentId: string; type: string }>("agent_events")
    .find({ type: "trigger.fired" })
    .toArray();
  const statuses = await agents.find({}).toArray();
  // Per order, everything first, then one verdict: a failure shows every order's counts.
  const counted = [];
  for (const [i, agentId] of agentIds.entries()) {
    const { input } = wallets[i] as { input: Address };
    const own = runs.filter((r) => r.agentId === agentId);
    // Straight from the chain: every transaction that changed the owner's JUP balance.
    const moved = await balanceChanges(chain.rpc, input);
    const { value } = await chain.rpc.getTokenAccountBalance(input, { commitment: "confirmed" }).send();
    counted.push({
      agentId,
      status: statuses.find((a) => a._id === agentId)?.status,
      runs: own.map((r) => r.outcome),
      firedEvents: fired.filter((e) => e.agentId === agentId).length,
      inputChanges: moved.map((m) => m.change),
      // The one change on chain is the one its run recorded.
      recorded: moved.map((m) => own.some((r) => r.result?.signature === m.signature)),
      spent: START_UNITS - BigInt(value.amount),
    });
  }
  const fills = counted.reduce((sum, c) => sum + c.inputChanges.length, 0);
  // From each firing's confirming observation to the firing kept (the watch's turn to write it).
  const turns = statuses
    .map((a) => a.state?.firing)
    .filter((f) => f !== undefined)
    .map((f) => Date.parse(f.firedAt) - Date.parse(f.observations.at(-1)?.at ?? f.firedAt));
  console.log(
    `trigger replicas: ${ORDERS} orders watched by ${REPLICAS} replicas, ${fills} fills on chain, ` +
      `${runs.length} runs, ${fired.length} trigger.fired events; firings set per replica: ${firedHere.join(", ")}; ` +
      `confirming observation to firedAt, ms: ${turns.sort((a, b) => a - b).join(", ")}`,
  );
  expect(counted).toEqual(
    agentIds.map((agentId) => ({
      agentId,
      status: "completed",
      runs: ["succeeded"],
      firedEvents: 1,
      inputChanges: [-AMOUNT_UNITS],
      recorded: [true],
      spent: AMOUNT_UNITS,
    })),
  );
  expect(fills).toBe(ORDERS);
  replicaChain.chainProcess.child.kill("SIGTERM");
}, 240_000);

/** Every landed transaction that changed `account`'s token balance, with the change. */
async function balanceChanges(
  rpc: Awaited<ReturnType<typeof startReplicaChain>>["chain"]["rpc"],
  account: Address,
): Promise<{ signature: string; change: bigint }[]> {
  const history = await rpc.getSignaturesForAddress(account, { limit: 1000, commitment: "confirmed" }).send();
  const moved: { signature: string; change: bigint }[] = [];
  for (const entry of history) {
    if (entry.err !== null) continue;
    const tx = await rpc
      .getTransaction(entry.signature as Signature, {
        encoding: "json",
        maxSupportedTransactionVersion: 0,
        commitment: "confirmed",
      })
      .send();
    const index = tx?.transaction.message.accountKeys.indexOf(account) ?? -1;
    const amountOf = (
      balances: readonly { accountIndex: number; uiTokenAmount: { amount: string } }[] | null | undefined,
    ) => BigInt(balances?.find((b) => b.accountIndex === index)?.uiTokenAmount.amount ?? "0");
    const change = amountOf(tx?.meta?.postTokenBalances) - amountOf(tx?.meta?.preTokenBalances);
    if (change !== 0n) moved.push({ signature: entry.signature, change });
  }
  return moved;
}

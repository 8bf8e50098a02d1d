/**
 * Exactly once on the chain, for swaps: three service replicas (`src/main.ts`) share
 * `npm run local-chain`, one database (FerretDB) and the Jupiter-shaped test server; 10 swap
 * agents, each from USDC into its own token through its own pool (a pool's output vault has one
 * delegate at a time, so agents never contend for one), run 5 hourly slots each, schedule time
 * scaled so that slots are seconds apart. One replica is SIGKILLed right after a swap went out and
 * before its outcome was recorded; another is SIGKILLed after a swap was kept and before it went
 * out, once that transaction's blockhash had expired (it stalls there, holding its lease), so the
 * replica that takes the slot over
 * must ask for a fresh route and sign anew; a third is SIGTERMed mid-run. Counted afterwards
 * straight from the chain: every owner's output account changed once per succeeded slot (each
 * change the one its run recorded), its input account went down by exactly one amount per
 * succeeded slot, every due slot succeeded, no slot twice.
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Address, generateKeyPairSigner } from "@solana/kit";
import { findAssociatedTokenPda, TOKEN_PROGRAM_ADDRESS } from "@solana-program/token";
import { MongoClient } from "mongodb";
import { afterAll, expect, inject, it } from "vitest";
import { loadCatalog } from "../src/token/catalog.ts";
import { startJupiterSwapServer } from "./support/jupiter-swap-server.ts";
import type { MainProcess } from "./support/main-process.ts";
import {
  countExactlyOnce,
  expectExactlyOnce,
  killReplicasAndCatchUp,
  startReplicaChain,
} from "./support/replica-kills.ts";

const OUTPUTS = ["JUP", "BONK", "WIF", "PYTH", "RAY", "ORCA", "JTO", "RENDER", "W", "POPCAT"];
const AGENTS = OUTPUTS.length;
const SLOTS = 5;
/** An hour of schedule time every 6 real seconds. */
const SCALE = 600;
const TOKENS = loadCatalog().tokens;
const mintOf = (symbol: string) => TOKENS.find((t) => t.symbol === symbol)?.mint as Address;
const USDC = mintOf("USDC");
const AMOUNT_UNITS = 1_000_000n; // 1 USDC a run
const START_UNITS = 1_000_000_000n;

const uri = inject("mongoUri");
const dbName = `swap_replicas_${randomBytes(3).toString("hex")}`;
const directory = mkdtempSync(join(tmpdir(), "swap-replicas-"));
const processes: MainProcess[] = [];
const client = new MongoClient(uri, { serverSelectionTimeoutMS: 2000 });

let closeJupiter: (() => Promise<void>) | undefined;

afterAll(async () => {
  for (const p of processes) p.kill();
  await closeJupiter?.();
  await client.db(dbName).dropDatabase();
  await client.close();
  rmSync(directory, { recursive: true, force: true });
});

it("three replicas swapping on one local chain: SIGKILL after a send, SIGKILL before one, SIGTERM, expired blockhashes: 0 missing, 0 duplicated swaps", async () => {
  const replicaChain = await startReplicaChain(directory, processes);
  const { rpcUrl, chain } = replicaChain;

  // One pool per output token at the catalog's price (the service holds a quote to it, within
  // SWAP_MAX_PRICE_DEVIATION_BPS), deep enough that 5 swaps barely move it: 1,000,000 USDC of each.
  const jupiter = await startJupiterSwapServer({
    rpcUrl,
    pools: OUTPUTS.map((symbol) => {
      const token = TOKENS.find((t) => t.symbol === symbol);
      const whole = BigInt(Math.round(1_000_000 / (token?.price ?? 1)));
      return {
        mintA: USDC,
        mintB: mintOf(symbol),
        reserveA: 1_000_000_000_000n,
        reserveB: whole * 10n ** BigInt(token?.decimals ?? 6),
      };
    }),
  });
  closeJupiter = jupiter.close;
  // Wallets hold USDC and have approved their agent's delegate, (anonymous, wallet) here (set by
  // cheatcode, as the owners' approvals would), and hold an empty output account, as the approval's
  // transaction would have created it (a swap run never creates it).
  const agents = await Promise.all(
    OUTPUTS.map(async (symbol) => {
      const wallet = await generateKeyPairSigner();
      const [input, output] = await Promise.all(
        [USDC, mintOf(symbol)].map(
          async (mint) =>
            (
              await findAssociatedTokenPda({
                owner: wallet.address,
                mint,
                tokenProgram: TOKEN_PROGRAM_ADDRESS,
              })
            )[0],
        ),
      );
      return { wallet: wallet.address, symbol, input: input as Address, output: output as Address };
    }),
  );
  for (const agent of agents) {
    await replicaChain.fundApproved(agent.wallet, USDC, START_UNITS);
    await chain.setTokenBalance(agent.wallet as Address, mintOf(agent.symbol), 0n);
  }

  const stopped = await killReplicasAndCatchUp({
    chain: replicaChain,
    mongoUri: uri,
    db: client.db(dbName),
    env: { JUPITER_SWAP_URL: jupiter.url },
    processes,
    scale: SCALE,
    slots: SLOTS,
    killAfter: "4:after",
    killBefore: "6:before",
    requests: agents.map((agent) => ({
      type: "swap",
      config: {
        wallet: agent.wallet,
        inputToken: "USDC",
        outputToken: agent.symbol,
        amount: 1,
        slippageBps: 100,
        schedule: "hourly",
      },
    })),
    keyPrefix: "swap-replicas",
  });

  // Every transaction that changed an owner's output balance added to it.
  const counts = await countExactlyOnce(stopped, {
    agents,
    what: "swaps",
    watched: (agent) => agent.output,
    checkChange: (change) => expect(change).toBeGreaterThan(0n),
    // The input went down by exactly one amount per swap: never twice for a slot.
    afterAgent: async (agent, doc, moved) => {
      const { value } = await chain.rpc
        .getTokenAccountBalance(agent.input, { commitment: "confirmed" })
        .send();
      expect(BigInt(value.amount), `agent ${doc._id}: input spent`).toBe(
        START_UNITS - BigInt(moved.length) * AMOUNT_UNITS,
      );
    },
  });
  expectExactlyOnce(counts, { name: "swap replicas", what: "swaps", agents: AGENTS, slots: SLOTS });
  replicaChain.chainProcess.child.kill("SIGTERM");
}, 300_000);

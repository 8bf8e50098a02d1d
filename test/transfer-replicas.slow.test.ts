/**
 * Exactly once on the chain: three service replicas (`src/main.ts`) share `npm run local-chain`
 * and one database (FerretDB); 100 transfer agents run 5 hourly slots each, schedule time scaled
 * so that slots are seconds apart. One replica is SIGKILLed right after a transfer went out and
 * before its outcome was recorded; another is SIGKILLed after a transfer was kept and before it
 * went out, once that transaction's blockhash had expired (it stalls there, holding its lease),
 * so the replica that takes the slot over must sign anew; a third is SIGTERMed mid-run. Counted afterwards straight from the chain: every agent's
 * destination received one transfer per succeeded slot, every due slot succeeded, no slot twice.
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
import type { MainProcess } from "./support/main-process.ts";
import {
  countExactlyOnce,
  expectExactlyOnce,
  killReplicasAndCatchUp,
  startReplicaChain,
} from "./support/replica-kills.ts";

const AGENTS = 100;
const SLOTS = 5;
/** An hour of schedule time every 6 real seconds. */
const SCALE = 600;
const USDC = loadCatalog().tokens.find((t) => t.symbol === "USDC")?.mint as Address;
const AMOUNT_UNITS = 1_000_000n; // 1 USDC a run

const uri = inject("mongoUri");
const dbName = `transfer_replicas_${randomBytes(3).toString("hex")}`;
const directory = mkdtempSync(join(tmpdir(), "transfer-replicas-"));
const processes: MainProcess[] = [];
const client = new MongoClient(uri, { serverSelectionTimeoutMS: 2000 });

afterAll(async () => {
  for (const p of processes) p.kill();
  await client.db(dbName).dropDatabase();
  await client.close();
  rmSync(directory, { recursive: true, force: true });
});

it("three replicas on one local chain: SIGKILL after a send, SIGKILL before one, SIGTERM, expired blockhashes: 0 missing, 0 duplicated transfers", async () => {
  const replicaChain = await startReplicaChain(directory, processes);

  // Sources hold USDC and have approved their agent's delegate, (anonymous, source) here (set by
  // cheatcode, as the owners' approvals would); destinations have no token account until the first
  // transfer creates it.
  const agents = await Promise.all(
    Array.from({ length: AGENTS }, async () => {
      const [source, destination] = await Promise.all([generateKeyPairSigner(), generateKeyPairSigner()]);
      const [destinationAccount] = await findAssociatedTokenPda({
        owner: destination.address,
        mint: USDC,
        tokenProgram: TOKEN_PROGRAM_ADDRESS,
      });
      return { source: source.address, destination: destination.address, destinationAccount };
    }),
  );
  for (const agent of agents) await replicaChain.fundApproved(agent.source, USDC, 1_000_000_000n);

  const stopped = await killReplicasAndCatchUp({
    chain: replicaChain,
    mongoUri: uri,
    db: client.db(dbName),
    processes,
    scale: SCALE,
    slots: SLOTS,
    killAfter: "30:after",
    killBefore: "60:before",
    requests: agents.map((agent) => ({
      type: "transfer",
      config: {
        source: agent.source,
        destination: agent.destination,
        amount: 1,
        token: "USDC",
        schedule: "hourly",
      },
    })),
    keyPrefix: "transfer-replicas",
  });

  // Every transaction that changed a destination's balance moved exactly one amount.
  const counts = await countExactlyOnce(stopped, {
    agents,
    what: "transfers",
    watched: (agent) => agent.destinationAccount,
    checkChange: (change) => expect(change).toBe(AMOUNT_UNITS),
  });
  expectExactlyOnce(counts, { name: "transfer replicas", what: "transfers", agents: AGENTS, slots: SLOTS });
  replicaChain.chainProcess.child.kill("SIGTERM");
}, 300_000);

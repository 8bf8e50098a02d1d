/**
 * Pending agents' approval checks with 3 replicas (3 schedulers on one store, in this process):
 * each check of each pending agent is claimed once for the fleet, and made with batched reads, so
 * the chain sees one read of each agent's token account per check, not three, in requests of up
 * to 100 accounts. Counted at the transport, on the embedded chain, with the claims in memory and
 * in MongoDB (FerretDB).
 */
import { randomBytes } from "node:crypto";
import { generateKeyPairSigner, type RpcTransport } from "@solana/kit";
import { MongoClient } from "mongodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { AgentRecord, AgentStore } from "../src/agent/agent-store.ts";
import { createMemoryAgentStore } from "../src/agent/memory-agent-store.ts";
import { createCachedChain } from "../src/chain/cached-chain.ts";
import { createDelegateKeys } from "../src/chain/delegate-keys.ts";
import { createKitChain } from "../src/chain/kit-chain.ts";
import { createKitTransferChain } from "../src/chain/kit-transfer-chain.ts";
import { builtInKinds } from "../src/kinds/built-in-kinds.ts";
import { type RunningLocalChain, startLocalChain } from "../src/local-chain/index.ts";
import { createApprovalCheck } from "../src/scheduler/approval-check.ts";
import { type CheckClaims, createMemoryCheckClaims } from "../src/scheduler/check-claims.ts";
import { createMemoryRunStore } from "../src/scheduler/memory-run-store.ts";
import { createMongoCheckClaims } from "../src/scheduler/mongo-check-claims.ts";
import { createScheduleClock } from "../src/scheduler/schedule-clock.ts";
import { createScheduler, type Scheduler } from "../src/scheduler/scheduler.ts";
import { createSimulatedExecutor } from "../src/scheduler/simulated-executor.ts";
import { loadCatalog } from "../src/token/catalog.ts";
import { createCatalogPriceSource } from "../src/token/catalog-price-source.ts";
import { tickedSchedulerSettings } from "./support/scheduler-settings.ts";

const catalog = loadCatalog();
const mintOf = (symbol: string) => catalog.tokens.find((t) => t.symbol === symbol)?.mint;
const AGENTS = 300;
const OWNERS = 3;
const T0 = Date.parse("2026-01-01T00:00:00Z");

let local: RunningLocalChain;
let mongo: MongoClient;
beforeAll(async () => {
  local = await startLocalChain({ catalog, port: 0, statePath: undefined, slotMs: 100 });
  mongo = new MongoClient(inject("mongoUri"));
}, 60_000);
afterAll(async () => {
  await mongo?.close();
  await local?.close();
});

describe.each([
  [
    "memory",
    (): CheckClaims[] => {
      // One process's claims, shared by its three schedulers.
      const shared = createMemoryCheckClaims();
      return [shared, shared, shared];
    },
  ],
  [
    "mongo",
    (): CheckClaims[] => {
      // Three replicas, each with its own claims object on the one database.
      const db = mongo.db(`activation_replicas_${randomBytes(3).toString("hex")}`);
      return Array.from({ length: 3 }, () => createMongoCheckClaims({ db, guard: (op) => op() }));
    },
  ],
])("with 3 replicas and check claims in %s", (_name, makeClaims) => {
  let store: AgentStore;
  let replicas: Scheduler[];
  let agents: AgentRecord[];
  /** The JSON-RPC requests the replicas made, by method, with the accounts they named. */
  const requests: { method: string; accounts: number }[] = [];
  let nowMs = T0;

  beforeAll(async () => {
    const counted = ((config: { payload: unknown }) => {
      const { method, params } = config.payload as { method: string; params: unknown[] };
      requests.push({
        method,
        accounts: method === "getMultipleAccounts" ? (params[0] as unknown[]).length : 1,
      });
      return local.transport(config as never);
    }) as RpcTransport;
    const chain = createCachedChain({
      chain: createKitChain({ transport: counted, commitment: "confirmed" }),
      maxTransactions: 0,
      maxAccounts: 100,
      accountTtlMs: 3_600_000,
    });
    const transfers = createKitTransferChain({ transport: counted, commitment: "confirmed" });
    store = createMemoryAgentStore();
    const wallets = await Promise.all(Array.from({ length: 30 }, () => generateKeyPairSigner()));
    agents = Array.from({ length: AGENTS }, (_, i) => ({
      agentId: randomBytes(16).toString("base64url"),
      owner: `owner-${i % OWNERS}`,
      type: "transfer",
      status: "pending",
      config: {
        source: wallets[i % wallets.length]?.address as string,
        destination: wallets[(i + 1) % wallets.length]?.address as string,
        amount: 1,
        token: "USDC",
        schedule: "hourly",
      },
      createdAt: new Date(T0 + (i % 10)),
      nextRunAt: new Date(T0 + 3_600_000),
      decimals: 6,
    }));
    for (const record of agents) await store.create({ record });
    const claims = makeClaims();
    const runs = createMemoryRunStore();
    replicas = claims.map((checkClaims, i) => {
      // Each replica derives delegates and reads the chain on its own, as separate processes do.
      const delegates = createDelegateKeys({ secret: new Uint8Array(32).fill(7) });
      return createScheduler({
        agents: store,
        runs,
        executor: createSimulatedExecutor({
          kinds: builtInKinds(),
          tokens: createCatalogPriceSource({ catalog }),
          mintOf,
        }),
        clock: createScheduleClock({ scale: 1 }),
        checkRunnable: async () => undefined,
        awaitReady: createApprovalCheck({ kinds: builtInKinds(), chain, transfers, delegates, mintOf }),
        checkClaims,
        worker: `replica-${i}`,
        ...tickedSchedulerSettings(),
        now: () => new Date(nowMs),
      });
    });
    // A first poll each: the replicas learn of the pending agents (in the background).
    nowMs = T0 + 100;
    await Promise.all(replicas.map((r) => r.tick()));
    await new Promise((resolve) => setTimeout(resolve, 100));
  }, 60_000);

  afterAll(async () => {
    await Promise.all(replicas.map((r) => r.stop(0)));
  });

  it("reads each pending agent's token account once per check, 100 accounts a request", async () => {
    const perCheck: { requests: number; accounts: number }[] = [];
    // Checks 1 to 4 (a second apart in an agent's first minute), each polled by all 3 at once.
    for (let check = 1; check <= 4; check++) {
      nowMs = T0 + check * 1_000 + 500;
      requests.length = 0;
      await Promise.all(replicas.map((r) => r.tick()));
      const reads = requests.filter((r) => r.method === "getMultipleAccounts");
      perCheck.push({ requests: reads.length, accounts: reads.reduce((n, r) => n + r.accounts, 0) });
      // Nothing else was read per agent (mints are cached: at most one read of the one mint).
      expect(requests.filter((r) => r.method !== "getMultipleAccounts").length).toBeLessThanOrEqual(1);
    }
    // Every agent's account read exactly once per check, whichever replica claimed it: not 3 times.
    expect(perCheck.map((c) => c.accounts)).toEqual([AGENTS, AGENTS, AGENTS, AGENTS]);
    // In batches: 300 accounts in 3 requests (one replica claimed them all) to 9 (each claimed some).
    for (const c of perCheck) expect(c.requests).toBeLessThanOrEqual(9);
    expect(perCheck.reduce((n, c) => n + c.requests, 0) / (4 * AGENTS)).toBeLessThanOrEqual(0.03);
    // They still wait: nobody approved.
    expect((await store.countOf("owner-0")).pending).toBe(AGENTS / OWNERS);
  });
});

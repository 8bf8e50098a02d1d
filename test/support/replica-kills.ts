/**
 * The replica-kill harness of the exactly-once tests that move tokens (transfer-replicas and
 * swap-replicas .slow.test.ts): one harness, so that transfers and swaps face the same chaos and
 * are counted by the same rules; each test keeps its own agents, their setup and what it checks
 * of each balance change.
 *
 * The chaos: replica a (a kill hook after a send) creates the agents; b and c (a kill hook before
 * a send) join; a and c are SIGKILLed by their hooks and replaced, b is SIGTERMed in the middle of
 * slot 3, and the survivors catch up to the cutoff (SLOTS slots after the last agent was created)
 * and stop. Then every agent is counted from its runs, the slot's journal and the chain.
 */
import { join } from "node:path";
import type { Address, Signature } from "@solana/kit";
import type { Db } from "mongodb";
import { expect } from "vitest";
import { createDelegateKeys } from "../../src/chain/delegate-keys.ts";
import { createScheduleClock } from "../../src/scheduler/schedule-clock.ts";
import { slotAt } from "../../src/scheduler/slots.ts";
import { type ChainClient, createChainClient } from "./chain-client.ts";
import { writeDelegateSeed, writeExecutorKeypair } from "./executor-keypair.ts";
import { LOCAL_CHAIN_MAIN, type MainProcess, spawnMain, startMain } from "./main-process.ts";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));
/** REPLICAS_DEBUG=1 prints progress while the survivors catch up. */
const DEBUG = process.env.REPLICAS_DEBUG !== undefined;

/** The local chain the replicas share, and the keys they sign with (written into `directory`). */
export interface ReplicaChain {
  readonly chainProcess: MainProcess;
  readonly rpcUrl: string;
  readonly chain: ChainClient;
  readonly keypairPath: string;
  readonly seedPath: string;
  /**
   * Sets `wallet`'s account of `mint` to hold `units`, all of them approved to the delegate the
   * replicas derive for (anonymous, wallet): by cheatcode, as the owner's approval would.
   */
  fundApproved(wallet: Address, mint: Address, units: bigint): Promise<void>;
}

/**
 * `npm run local-chain` on its own (slots of 40 ms: a blockhash expires 6 s after it was issued),
 * once it answers; an executor keypair funded on it and a delegate seed, both in `directory`.
 * The chain process goes into `processes`, for the test's afterAll to kill.
 */
export async function startReplicaChain(directory: string, processes: MainProcess[]): Promise<ReplicaChain> {
  // Port 0: the chain takes a free port whose next port (PubSub) is free too, and says which in
  // its log; a port chosen here beforehand could be taken, with its + 1, before the chain binds.
  const chainProcess = spawnMain(
    { LOCAL_SOLANA_RPC_PORT: "0", LOCAL_SOLANA_SLOT_MS: "40", LOG_LEVEL: "info" },
    LOCAL_CHAIN_MAIN,
  );
  processes.push(chainProcess);
  // waitForLog's error carries the chain's stdout and stderr: why it did not come up.
  const serving = await chainProcess.waitForLog(
    (line) => typeof line.solana_rpc === "string" && /^local chain serving/.test(String(line.msg)),
    60_000,
  );
  const rpcUrl = String(serving.solana_rpc);
  const chain = createChainClient(rpcUrl);
  const keypairPath = join(directory, "executor.json");
  const executor = writeExecutorKeypair(keypairPath);
  const seedPath = join(directory, "delegate.seed");
  // The replicas derive each (owner, wallet) delegate from this secret; so does fundApproved, to
  // set the approvals the owners' wallets would sign.
  const delegates = createDelegateKeys({ secret: writeDelegateSeed(seedPath) });
  await chain.airdrop(executor, 100n);
  const fundApproved = async (wallet: Address, mint: Address, units: bigint) => {
    const response = await chain.raw("surfnet_setTokenAccount", [
      wallet,
      mint,
      {
        amount: Number(units),
        delegate: delegates.addressOf("anonymous", wallet),
        delegatedAmount: Number(units),
      },
    ]);
    expect(response.error).toBeUndefined();
  };
  return { chainProcess, rpcUrl, chain, keypairPath, seedPath, fundApproved };
}

/** CreateAgent over REST on `port`, ten at a time, each under its own idempotency key; the ids in order. */
async function createAgentsOver(port: number, requests: readonly object[], keyPrefix: string) {
  const agentIds: string[] = [];
  for (let i = 0; i < requests.length; i += 10) {
    const created = await Promise.all(
      requests.slice(i, i + 10).map(async (request, j) => {
        const res = await fetch(`http://127.0.0.1:${port}/v1/agents`, {
          method: "POST",
          headers: { "content-type": "application/json", "idempotency-key": `${keyPrefix}-${i + j}` },
          body: JSON.stringify(request),
        });
        const json = (await res.json()) as { data: { agentId: string } };
        expect(res.status, JSON.stringify(json)).toBe(200);
        return json.data.agentId;
      }),
    );
    agentIds.push(...created);
  }
  return agentIds;
}

/** Every replica's environment: one database, one chain, time scaled by `scale`, leases that outlive a blockhash. */
function replicaEnv(options: {
  mongoUri: string;
  dbName: string;
  chain: ReplicaChain;
  scale: number;
  extra?: Record<string, string>;
}): Record<string, string> {
  return {
    MONGODB_URI: options.mongoUri,
    MONGODB_DB: options.dbName,
    SOLANA_RPC_URL: options.chain.rpcUrl,
    EXECUTOR_KEYPAIR: options.chain.keypairPath,
    DELEGATE_SEED: options.chain.seedPath,
    // The test's callers have no keys: every agent is anonymous's.
    ALLOW_ANONYMOUS_TRANSFERS: "true",
    ...options.extra,
    SCHEDULE_TIME_SCALE: String(options.scale),
    SCHEDULER_POLL_INTERVAL_MS: "250",
    // The kill before a send waits for the kept transaction's blockhash to expire (main.ts's
    // hook), so a take-over signs anew; the replica with that hook holds longer leases (below).
    SCHEDULER_LEASE_MS: "8000",
    SCHEDULER_CONCURRENCY: "16",
    SCHEDULER_MAX_ATTEMPTS: "20",
    SCHEDULER_RETRY_BASE_MS: "50",
    SCHEDULER_RETRY_MAX_MS: "500",
    SHUTDOWN_TIMEOUT_MS: "5000",
  };
}

/** An agent as the database keeps it, as far as the counting needs. */
export interface AgentDoc {
  readonly _id: string;
  readonly createdAt: Date;
}

/** The replicas stopped, with nothing in flight: what countExactlyOnce counts from. */
export interface StoppedReplicas {
  readonly db: Db;
  readonly chain: ChainClient;
  readonly scale: number;
  readonly slots: number;
  /** SLOTS slots after the last agent was created: every slot up to it is due. */
  readonly cutoff: number;
  /** The agents as kept, and the ids CreateAgent gave, in the order of the requests. */
  readonly docs: readonly AgentDoc[];
  readonly agentIds: readonly string[];
}

/**
 * The chaos, from the first replica to the survivors' stop (see the module's comment), every
 * replica on `chain` and `db` (at `mongoUri`), schedule time scaled by `scale`, with `env` on top:
 * `requests` create the agents over replica a (CreateAgent bodies, under idempotency keys
 * `<keyPrefix>-<i>`), and each agent's id is the same index; `killAfter` and `killBefore` are the
 * kill hooks of a and c (TEST_KILL_AT_SEND: "<sends>:after", "<sends>:before"). Every process goes
 * into `processes`, for the test's afterAll to kill.
 */
export async function killReplicasAndCatchUp(options: {
  chain: ReplicaChain;
  mongoUri: string;
  db: Db;
  env?: Record<string, string>;
  processes: MainProcess[];
  scale: number;
  slots: number;
  requests: readonly object[];
  keyPrefix: string;
  killAfter: string;
  killBefore: string;
}): Promise<StoppedReplicas> {
  const { db, processes, scale, slots } = options;
  const slotMs = 3_600_000 / scale;
  const env = replicaEnv({
    mongoUri: options.mongoUri,
    dbName: db.databaseName,
    chain: options.chain,
    scale,
    extra: options.env,
  });
  const a = await startMain({ ...env, TEST_KILL_AT_SEND: options.killAfter });
  processes.push(a);
  const agentIds = await createAgentsOver(a.port, options.requests, options.keyPrefix);
  const [b, c] = await Promise.all([
    startMain(env),
    // c's hook stalls at a send until the kept transaction's blockhash has expired (6 s of 40 ms
    // slots), renewing its lease meanwhile. Renewals that the loaded database answers late can
    // let an 8 s lease run out during that stall, and then the replica that takes the slot over
    // finds the transaction still valid and sends it, and no slot is signed anew (a CI run saw
    // exactly that). c's leases last 20 s, so a take-over of the stalled slot comes after the
    // expiry however the renewals fare.
    startMain({ ...env, TEST_KILL_AT_SEND: options.killBefore, SCHEDULER_LEASE_MS: "20000" }),
  ]);
  processes.push(b, c);

  const docs = await db.collection<AgentDoc>("agents").find({}).toArray();
  expect(docs).toHaveLength(options.requests.length);
  const lastCreated = Math.max(...docs.map((d) => d.createdAt.getTime()));
  const cutoff = lastCreated + slots * slotMs;

  // The hooks kill a and c while they work; each is replaced by a replica without a hook.
  const replacements = await Promise.all(
    [a, c].map(async (killed) => {
      const exit = await killed.exited;
      expect(exit.signal).toBe("SIGKILL");
      const replacement = await startMain(env);
      processes.push(replacement);
      return replacement;
    }),
  );
  // A graceful stop in the middle of slot 3.
  await sleep(lastCreated + 2.5 * slotMs - Date.now());
  b.child.kill("SIGTERM");
  expect((await b.exited).code).toBe(0);

  // The survivors catch up to the cutoff.
  const agentsCollection = db.collection<{ nextRunAt?: Date }>("agents");
  const deadline = Date.now() + 180_000;
  for (;;) {
    const behind = await agentsCollection.countDocuments({ nextRunAt: { $lte: new Date(cutoff) } });
    if (behind === 0) break;
    if (DEBUG) console.log(`${Math.round((Date.now() - lastCreated) / 1000)} s: ${behind} agents behind`);
    expect(Date.now(), "the survivors catch up within 180 s").toBeLessThan(deadline);
    await sleep(500);
  }
  // Nothing in flight while the chain is counted.
  for (const survivor of replacements) survivor.child.kill("SIGTERM");
  for (const survivor of replacements) expect((await survivor.exited).code).toBe(0);
  return { db, chain: options.chain.chain, scale, slots, cutoff, docs, agentIds };
}

/** What the counting found, over all agents, and what shows the chaos happened. */
export interface ExactlyOnceCounts {
  /** (agent, slot) pairs due by the cutoff. */
  due: number;
  missing: number;
  duplicated: number;
  /** Balance changes on chain that no run recorded and that were not in flight at the stop. */
  unrecorded: number;
  inFlightAtStop: number;
  /** Balance changes on chain. */
  landed: number;
  /** Leases taken over from another replica. */
  takeovers: number;
  /** Slots signed anew after an expired blockhash. */
  resigned: number;
}

/**
 * Counts every agent (`agents`, the test's own, in the order it created them) from its runs, the journal and the chain: each due slot succeeded once; each
 * transaction that changed `watched(agent)`'s balance (`checkChange` says whether the change is
 * right) is one its run recorded, or one in flight at the stop. `afterAgent` checks more of an
 * agent once its balance changes (`moved`, their signatures) are known. `what` names the changes
 * in messages ("transfers", "swaps").
 */
export async function countExactlyOnce<A>(
  stopped: StoppedReplicas,
  options: {
    agents: readonly A[];
    what: string;
    watched: (agent: A) => Address;
    checkChange: (change: bigint) => void;
    afterAgent?: (agent: A, doc: AgentDoc, moved: readonly string[]) => Promise<void>;
  },
): Promise<ExactlyOnceCounts> {
  const { db, chain } = stopped;
  const { agents } = options;
  const runs = await db
    .collection<{ agentId: string; scheduledAt: Date; outcome: string; result?: { signature?: string } }>(
      "agent_runs",
    )
    .find({})
    .toArray();
  const clock = createScheduleClock({ scale: stopped.scale });
  let due = 0;
  let missing = 0;
  let duplicated = 0;
  let unrecorded = 0;
  let inFlightAtStop = 0;
  const journalled = new Map(
    (
      await db
        .collection<{ agentId: string; scheduledAt: Date; signature: string }>("agent_run_transactions")
        .find({})
        .toArray()
    ).map((t) => [t.signature, t] as const),
  );
  let landed = 0;
  for (const [index, doc] of stopped.docs.entries()) {
    const agent = agents[stopped.agentIds.indexOf(doc._id)] ?? agents[index];
    if (agent === undefined) throw new Error("an agent the test did not create");
    const succeeded = runs.filter((r) => r.agentId === doc._id && r.outcome === "succeeded");
    const bySlot = new Map<number, number>();
    for (const run of succeeded) {
      bySlot.set(run.scheduledAt.getTime(), (bySlot.get(run.scheduledAt.getTime()) ?? 0) + 1);
    }
    for (let k = 1; k <= stopped.slots; k++) {
      const slot = clock.toReal(slotAt(clock.toSchedule(doc.createdAt), "hourly", k)).getTime();
      if (slot > stopped.cutoff) continue;
      due++;
      if (!bySlot.has(slot)) missing++;
    }
    duplicated += [...bySlot.values()].filter((n) => n > 1).length;
    // Straight from the chain: every transaction that changed the watched account's balance.
    const watched = options.watched(agent);
    const history = await chain.rpc
      .getSignaturesForAddress(watched, { limit: 1000, commitment: "confirmed" })
      .send();
    const moved: string[] = [];
    for (const entry of history) {
      if (entry.err !== null) continue;
      const tx = await chain.rpc
        .getTransaction(entry.signature as Signature, {
          encoding: "json",
          maxSupportedTransactionVersion: 0,
          commitment: "confirmed",
        })
        .send();
      const keys = tx?.transaction.message.accountKeys ?? [];
      const index = keys.indexOf(watched);
      const before = tx?.meta?.preTokenBalances?.find((b) => b.accountIndex === index)?.uiTokenAmount.amount;
      const after = tx?.meta?.postTokenBalances?.find((b) => b.accountIndex === index)?.uiTokenAmount.amount;
      const change = BigInt(after ?? "0") - BigInt(before ?? "0");
      if (change === 0n) continue;
      options.checkChange(change);
      moved.push(entry.signature);
    }
    landed += moved.length;
    // One balance change per succeeded slot, and each is the one its run recorded.
    const recorded = new Set(succeeded.map((r) => r.result?.signature));
    // A transaction kept in the journal for a slot that has no succeeded run was in flight when
    // the survivors stopped (the shutdown deadline cut its wait): the next replica to claim that
    // slot finds it there and records it, so it is not a second transfer. Any other is.
    const pending = moved.filter((s) => {
      if (recorded.has(s)) return false;
      const kept = journalled.get(s);
      return kept !== undefined && kept.agentId === doc._id && !bySlot.has(kept.scheduledAt.getTime());
    });
    inFlightAtStop += pending.length;
    unrecorded += moved.filter((s) => !recorded.has(s) && !pending.includes(s)).length;
    expect(
      moved.length,
      `agent ${doc._id}: ${options.what} on chain vs succeeded slots and slots in flight at the stop`,
    ).toBe(bySlot.size + pending.length);
    await options.afterAgent?.(agent, doc, moved);
  }
  const journal = db.collection<{ agentId: string; scheduledAt: Date }>("agent_run_transactions");
  const resigned = await journal
    .aggregate([
      { $group: { _id: { a: "$agentId", s: "$scheduledAt" }, n: { $sum: 1 } } },
      { $match: { n: { $gt: 1 } } },
    ])
    .toArray();
  const takeovers = await db.collection("agent_run_claims").countDocuments({ generation: { $gt: 0 } });
  return {
    due,
    missing,
    duplicated,
    unrecorded,
    inFlightAtStop,
    landed,
    takeovers,
    resigned: resigned.length,
  };
}

/**
 * The verdict, the same for every token the agents move: logs the counts (`name`, "transfer
 * replicas"; `what`, "transfers"), then every (agent, slot) due by the cutoff succeeded once and
 * moved once on chain, and the chaos happened: leases were taken over, and at least one slot was
 * signed twice because its first transaction expired unsent.
 */
export function expectExactlyOnce(
  counts: ExactlyOnceCounts,
  options: { name: string; what: string; agents: number; slots: number },
): void {
  console.log(describeCounts(options.name, options.agents, options.what, counts));
  expect(counts.due).toBeGreaterThanOrEqual(options.agents * options.slots);
  expect(counts.missing).toBe(0);
  expect(counts.duplicated).toBe(0);
  expect(counts.unrecorded).toBe(0);
  expect(counts.takeovers).toBeGreaterThan(0);
  expect(counts.resigned).toBeGreaterThan(0);
}

/** The counts in one line, for the test's log: `name` ("transfer replicas"), `what` ("transfers"). */
function describeCounts(name: string, agents: number, what: string, counts: ExactlyOnceCounts): string {
  return (
    `${name}: ${agents} agents, ${counts.due} (agent, slot) pairs due by the cutoff, ${counts.landed} ${what} on chain, ` +
    `${counts.missing} missing, ${counts.duplicated} duplicated, ${counts.unrecorded} on chain without a run, ` +
    `${counts.inFlightAtStop} in flight when the survivors stopped, ` +
    `${counts.takeovers} leases taken over, ${counts.resigned} slots signed anew after an expired blockhash`
  );
}

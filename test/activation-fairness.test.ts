/**
 * One owner's pending agents do not delay another owner's activation: 10,000 pending transfer
 * agents of one owner (never approved) are put straight into the store (as that owner could have
 * made them, had an admin raised its caps), then another owner creates an agent over REST and its
 * wallet approves it on the embedded chain. The agent is active within 2 s of the approval's
 * confirmation, on the memory store and on MongoDB (FerretDB). The scheduler polls at its default
 * interval (1 s).
 */
import { randomBytes } from "node:crypto";
import { type Address, generateKeyPairSigner } from "@solana/kit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AgentRecord } from "../src/agent/agent-store.ts";
import { loadCatalog } from "../src/token/catalog.ts";
import {
  type AgentOnChain,
  agentStores,
  startAgentOnChain,
  stopAgentOnChain,
} from "./support/agent-on-chain.ts";
import type { RunningServer } from "./support/start-server.ts";
import { until } from "./support/transfer-owner.ts";

const USDC = loadCatalog().tokens.find((t) => t.symbol === "USDC")?.mint as Address;
const FLOOD = 10_000;
const FLOODER = "flooder";

describe.each(agentStores("activation_fairness"))(
  "activation with %s store and 10,000 pending agents of another owner",
  (storeName, storeEnv) => {
    let server: RunningServer;
    let setup: AgentOnChain;

    beforeAll(async () => {
      // The poll's fairness is what this tests: the watch of pending accounts, which would activate
      // the agent without it, is off (pending-account-watch.test.ts tests that one).
      setup = await startAgentOnChain(
        { SCHEDULER_ENABLED: "true", PENDING_WATCH_MAX_ACCOUNTS: "0", ...storeEnv() },
        [[USDC, 100_000_000n]],
      );
      server = setup.server;
      // Wallets that never approve anything: their agents stay pending for the whole test.
      const wallets = await Promise.all(Array.from({ length: 10 }, () => generateKeyPairSigner()));
      const destination = (await generateKeyPairSigner()).address;
      const createdAt = Date.now() - 5_000;
      const flood: AgentRecord[] = Array.from({ length: FLOOD }, (_, i) => ({
        agentId: randomBytes(16).toString("base64url"),
        owner: FLOODER,
        type: "transfer",
        status: "pending",
        config: {
          source: wallets[i % wallets.length]?.address as string,
          destination,
          amount: 1,
          token: "USDC",
          schedule: "hourly",
        },
        createdAt: new Date(createdAt + Math.floor(i / 4)),
        nextRunAt: new Date(createdAt + 3_600_000),
        decimals: 6,
      }));
      const mongo = server.context.mongoClient;
      if (mongo === undefined) {
        for (const record of flood) await server.context.agentStore.create({ record });
      } else {
        // Straight into the collection (as the store writes them): 10,000 creates one by one
        // would take minutes on FerretDB.
        const db = mongo.db(server.context.config.mongo?.dbName);
        const agents = db.collection("agents");
        // The owner's tally, as the store keeps it beside the agents (see countOf).
        await db
          .collection("agent_owner_tallies")
          .insertOne({ _id: FLOODER as never, held: FLOOD, pending: FLOOD, counted: true });
        for (let i = 0; i < FLOOD; i += 1_000) {
          await agents.insertMany(
            flood.slice(i, i + 1_000).map(({ agentId, ...rest }) => ({ _id: agentId, ...rest }) as never),
          );
        }
      }
      // The scheduler learns of the flood (on FerretDB a look at the pending agents reads all of
      // them, a few seconds at 10,000) and is checking it.
      await new Promise((resolve) => setTimeout(resolve, 10_000));
    }, 600_000);

    afterAll(() => stopAgentOnChain(storeName, server));

    it("activates another owner's agent within 2 s of its approval landing", async () => {
      const { owners, owner } = setup;
      const destination = (await generateKeyPairSigner()).address;
      const started = performance.now();
      const agentId = await owners.createTransfer({
        source: owner.address,
        destination,
        amount: 1,
        token: "USDC",
      });
      const createdMs = performance.now() - started;
      // PrepareApproval reads the owner's agents, which on FerretDB reads all 10,001 (seconds on a
      // busy machine) and may pass the store's 5 s bound: asked again then (docs/performance.md).
      for (let attempt = 1; ; attempt++) {
        try {
          await owners.approve(agentId, 100, owner);
          break;
        } catch (error) {
          if (attempt === 10 || !/HTTP 503/.test(String(error))) throw error;
        }
      }
      const landed = performance.now();
      await until(
        async () =>
          (await owners.ok("GET", `/v1/agents/${agentId}`)).status === "active" ? true : undefined,
        30_000,
        "the approved agent is active",
      );
      const latencyMs = performance.now() - landed;
      console.log(
        `${storeName}: created in ${Math.round(createdMs)} ms, active ${Math.round(latencyMs)} ms after its approval landed`,
      );
      expect(latencyMs).toBeLessThan(2_000);
      // The flood is still there, pending: it was checked, not dropped.
      expect(await server.context.agentStore.countOf(FLOODER)).toEqual({
        held: FLOOD,
        pending: FLOOD,
      });
    }, 60_000);
  },
);

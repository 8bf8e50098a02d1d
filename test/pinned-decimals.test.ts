/**
 * An agent runs only against the mint decimals its amount was checked with at CreateAgent: a mint
 * rewritten since (a cheatcode here; another chain behind the same URL) would make the same amount
 * another value. A real service on the embedded chain, its agents in memory and in MongoDB
 * (FerretDB); the run through the service's executor.
 */
import { randomBytes } from "node:crypto";
import { type Address, generateKeyPairSigner } from "@solana/kit";
import { describe, expect, inject, it } from "vitest";
import { localKey } from "../src/local-chain/index.ts";
import type { ExecutionJournal } from "../src/scheduler/executor.ts";
import { loadCatalog } from "../src/token/catalog.ts";
import { createChainClient } from "./support/chain-client.ts";
import { useCleanups } from "./support/cleanups.ts";
import { startServer } from "./support/start-server.ts";

const cleanup = useCleanups();
const USDC = loadCatalog().tokens.find((t) => t.symbol === "USDC")?.mint as Address;

const STORES: [string, () => Record<string, string>][] = [
  ["memory", () => ({})],
  [
    "mongo",
    () => ({
      MONGODB_URI: inject("mongoUri"),
      MONGODB_DB: `pinned_decimals_${randomBytes(3).toString("hex")}`,
    }),
  ],
];

describe.each(STORES)("an agent's pinned decimals, on the %s store", (storeName, storeEnv) => {
  it("a run refuses, for good, a mint whose decimals differ from those its amount was checked with", async () => {
    const server = await startServer({ env: storeEnv() });
    cleanup(async () => {
      if (storeName === "mongo") {
        await server.context.mongoClient?.db(server.context.config.mongo?.dbName).dropDatabase();
      }
      await server.close();
    });
    const chain = createChainClient(server.localChain?.url as string);
    // USDC's mint rewritten to 9 decimals (byte 44 of the mint layout), as a cheatcode can.
    const { value } = await chain.rpc.getAccountInfo(USDC, { encoding: "base64" }).send();
    if (value === null) throw new Error("USDC's mint is not on the chain");
    const data = Buffer.from(value.data[0], "base64");
    expect(data[44]).toBe(6);
    data[44] = 9;
    const written = await chain.raw("surfnet_setAccount", [USDC, { data: data.toString("hex") }]);
    expect(written).not.toHaveProperty("error");

    // CreateAgent checks the amount against the token list's 6 decimals, and keeps them.
    const agent = await server.context.agents.create("anonymous", {
      type: "transfer",
      config: {
        source: localKey("wallet 1").address,
        destination: (await generateKeyPairSigner()).address,
        amount: 1.5,
        token: "USDC",
        schedule: "daily",
      },
      idempotencyKey: "",
    });
    expect(agent.decimals).toBe(6);
    expect((await server.context.agents.get("anonymous", agent.agentId)).decimals).toBe(6);

    const journal: ExecutionJournal = {
      transactions: async () => [],
      record: async () => false,
      succeededToday: async () => [],
    };
    const result = await server.context.executor.execute({
      agent,
      scheduledAt: new Date(),
      attempt: 1,
      idempotencyKey: "pinned-decimals",
      signal: AbortSignal.timeout(10_000),
      journal,
    });
    expect(result).toEqual({
      ok: false,
      retryable: false,
      error: expect.stringMatching(
        /^USDC's mint has 9 decimals on this chain, not the 6 this agent's amount was checked with/,
      ),
    });
  });
});

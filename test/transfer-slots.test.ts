/**
 * Two slots of one agent signed within the same second (catch-up after downtime, a fast schedule):
 * they share a blockhash, yet each is its own transaction, lands, and moves its own amount. Without
 * a memo naming the run, the two would be the same bytes with the same signature: the second slot
 * would be refused as already processed, or take the first one's landing for its own.
 */
import { type Address, generateKeyPairSigner } from "@solana/kit";
import { findAssociatedTokenPda, TOKEN_PROGRAM_ADDRESS } from "@solana-program/token";
import { afterAll, beforeAll, expect, it } from "vitest";
import { type ExecutionJournal, executionKeyOf } from "../src/scheduler/executor.ts";
import { loadCatalog } from "../src/token/catalog.ts";
import { type ChainClient, createChainClient } from "./support/chain-client.ts";
import { type RunningServer, startServer } from "./support/start-server.ts";
import { createTransferOwner } from "./support/transfer-owner.ts";

const USDC = loadCatalog().tokens.find((t) => t.symbol === "USDC")?.mint as Address;
let server: RunningServer;
let chain: ChainClient;

beforeAll(async () => {
  server = await startServer();
  chain = createChainClient(server.localChain?.url as string);
});
afterAll(async () => {
  await server?.close();
});

it("two slots of one agent signed with one blockhash are two transfers", async () => {
  const owner = createTransferOwner({ baseUrl: server.baseUrl, chain });
  const source = await generateKeyPairSigner();
  const destination = (await generateKeyPairSigner()).address;
  await chain.airdrop(source.address, 1n);
  await chain.setTokenBalance(source.address, USDC, 10_000_000n);
  const agentId = await owner.createTransfer({
    source: source.address,
    destination,
    amount: 1,
    token: "USDC",
  });
  await owner.approve(agentId, 5, source);
  const agent = await server.context.agents.get("anonymous", agentId);
  const journal = (): ExecutionJournal => ({
    transactions: async () => [],
    record: async () => true,
    succeededToday: async () => [],
  });
  const slots = [new Date("2031-01-01T00:00:00Z"), new Date("2031-01-01T01:00:00Z")];
  const results = await Promise.all(
    slots.map((scheduledAt) =>
      server.context.executor.execute({
        agent,
        scheduledAt,
        attempt: 1,
        idempotencyKey: executionKeyOf(agentId, scheduledAt),
        signal: AbortSignal.timeout(20_000),
        journal: journal(),
      }),
    ),
  );
  for (const result of results) expect(result).toMatchObject({ ok: true });
  const signatures = results.map((r) => (r.ok ? r.result.signature : undefined));
  expect(new Set(signatures).size).toBe(2);
  const [account] = await findAssociatedTokenPda({
    owner: destination,
    mint: USDC,
    tokenProgram: TOKEN_PROGRAM_ADDRESS,
  });
  expect(await owner.balance(account)).toBe(2_000_000n);
});

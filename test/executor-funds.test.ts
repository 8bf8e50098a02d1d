/**
 * An executor that cannot pay fees is said so, everywhere an operator or an owner looks: a chain
 * whose faucet was emptied (a cheatcode) is saved and the service restarted on it, so the key it
 * makes cannot be funded. The start-up log says so (not "funded"), /readyz stays 200 and carries
 * the warning, `executor_balance_lamports` shows 0, and a run fails saying "the executor cannot pay
 * fees: fund <address>". Once the executor is funded, a run's refresh clears the warning.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Address, generateKeyPairSigner } from "@solana/kit";
import { findAssociatedTokenPda, TOKEN_PROGRAM_ADDRESS } from "@solana-program/token";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { localKey } from "../src/local-chain/index.ts";
import type { ExecutionJournal } from "../src/scheduler/executor.ts";
import { loadCatalog } from "../src/token/catalog.ts";
import { type ChainClient, createChainClient } from "./support/chain-client.ts";
import { type RunningServer, startServer } from "./support/start-server.ts";
import { createTransferOwner, type Json, until } from "./support/transfer-owner.ts";

const USDC = loadCatalog().tokens.find((t) => t.symbol === "USDC")?.mint as Address;
const FAUCET = localKey("faucet").address;

describe("an executor that cannot pay fees", () => {
  let directory: string;
  let server: RunningServer;
  let chain: ChainClient;
  let executor: string;

  beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), "executor-funds-"));
    const env = { LOCAL_SOLANA_STATE: join(directory, "chain.bin") };
    // A chain whose faucet holds nothing, saved.
    const first = await startServer({ env });
    const emptied = await createChainClient(first.localChain?.url as string).raw("surfnet_setAccount", [
      FAUCET,
      { lamports: 0 },
    ]);
    expect(emptied).not.toHaveProperty("error");
    await first.close();
    // The service restarted on it: the executor's key it makes cannot be funded.
    server = await startServer({ env });
    chain = createChainClient(server.localChain?.url as string);
    const owners = createTransferOwner({ baseUrl: server.baseUrl, chain });
    executor = (await owners.ok("GET", "/v1/executor")).address as string;
  });
  afterAll(async () => {
    await server?.close();
    if (directory !== undefined) await rm(directory, { recursive: true, force: true });
  });

  const readyz = async () => {
    const response = await fetch(`${server.baseUrl}/readyz`);
    return { status: response.status, body: (await response.json()) as Json };
  };
  const problem = () => `the executor cannot pay fees: fund ${executor}`;

  it("says so at start, in /readyz (still 200) and in executor_balance_lamports", async () => {
    const messages = server.logs.map((line) => String(line.msg));
    expect(messages.some((m) => m.includes("funded by the embedded chain"))).toBe(false);
    const unfunded = server.logs.find((line) => String(line.msg).includes("could not fund it"));
    expect(unfunded).toMatchObject({ level: 50, executor });

    const ready = await until(
      async () => {
        const answer = await readyz();
        return (answer.body.warnings as string[] | undefined) === undefined ? undefined : answer;
      },
      10_000,
      "/readyz warns",
    );
    // Readiness does not hinge on it: every replica pays with this executor.
    expect(ready.status).toBe(200);
    expect(ready.body.status).toBe("ready");
    expect(ready.body.warnings).toEqual([
      expect.stringMatching(new RegExp(`^${problem()} \\(it holds 0 lamports`)),
    ]);
    expect(server.logs.find((line) => String(line.msg).startsWith(problem()))).toMatchObject({ level: 40 });
    const metrics = await (await fetch(`${server.baseUrl}/metrics`)).text();
    expect(metrics).toMatch(/^executor_balance_lamports 0$/m);
  });

  it("names it in a run's reason, and a run after funding clears the warning", async () => {
    // A wallet that approved its delegate, funded by cheatcodes (the faucet is empty).
    const owner = await generateKeyPairSigner();
    const owners = createTransferOwner({ baseUrl: server.baseUrl, chain });
    expect(
      await chain.raw("surfnet_setAccount", [owner.address, { lamports: 1_000_000_000 }]),
    ).not.toHaveProperty("error");
    await chain.setTokenBalance(owner.address, USDC, 100_000_000n);
    const destination = (await generateKeyPairSigner()).address;
    const created = await owners.ok("POST", "/v1/agents", {
      type: "transfer",
      config: {
        source: owner.address,
        destination,
        amount: 1,
        token: "USDC",
        schedule: "daily",
      },
    });
    await owners.approve(created.agentId as string, 10, owner);
    // The approval created the destination's token account (the wallet paid); its owner has closed
    // it since, so a run must create it again, the executor paying the rent.
    const [destinationAccount] = await findAssociatedTokenPda({
      owner: destination,
      mint: USDC,
      tokenProgram: TOKEN_PROGRAM_ADDRESS,
    });
    expect(await chain.raw("surfnet_setAccount", [destinationAccount, { lamports: 0 }])).not.toHaveProperty(
      "error",
    );
    expect(await owners.tokenAccount(destinationAccount)).toBeUndefined();
    const agent = await server.context.agents.get("anonymous", created.agentId as string);
    const journal: ExecutionJournal = {
      transactions: async () => [],
      // Each run signs anew and sends: the send's preflight is what refuses an unfunded executor.
      record: async () => true,
      succeededToday: async () => [],
    };
    const run = () =>
      server.context.executor.execute({
        agent,
        scheduledAt: new Date(),
        attempt: 1,
        idempotencyKey: `funds-${Date.now()}`,
        signal: AbortSignal.timeout(10_000),
        journal,
      });

    const failed = await run();
    expect(failed).toEqual({
      ok: false,
      error: `${problem()} (the transfer failed on chain: AccountNotFound)`,
    });

    // Enough for the fee but not for the rent of the destination's new token account: the
    // account's creation fails, and the reason names the executor, not the owner's balance.
    expect(await chain.raw("surfnet_setAccount", [executor, { lamports: 1_000_000 }])).not.toHaveProperty(
      "error",
    );
    expect(await run()).toEqual({
      ok: false,
      error: `the executor cannot pay the rent of the destination's new token account: fund ${executor}`,
    });

    // Funded (as an operator would), the next run moves the tokens, and the warning goes.
    expect(await chain.raw("surfnet_setAccount", [executor, { lamports: 2_000_000_000 }])).not.toHaveProperty(
      "error",
    );
    const next = await run();
    expect(next).toMatchObject({
      ok: true,
      result: { kind: "transfer", amount: 1, destinationCreated: true, rentLamports: 2_039_280 },
    });
    await until(
      async () => ((await readyz()).body.warnings === undefined ? true : undefined),
      10_000,
      "/readyz stops warning",
    );
    expect(server.logs.some((line) => line.msg === "the executor can pay fees again")).toBe(true);
    expect(await (await fetch(`${server.baseUrl}/metrics`)).text()).toMatch(
      /^executor_balance_lamports \d{10}$/m,
    );
  });
});

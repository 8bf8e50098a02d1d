/**
 * PrepareApproval answers only for an approval that can land: the source wallet's token account
 * for the agent's token must exist (and not be frozen) on the chain, or the wallet would sign and
 * pay for a transaction the chain refuses. On the embedded chain, over REST and Connect.
 */
import { Code } from "@connectrpc/connect";
import { type Address, generateKeyPairSigner } from "@solana/kit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AgentService } from "../gen/agent/v1/agent_pb.ts";
import { loadCatalog } from "../src/token/catalog.ts";
import { createProtocols } from "./support/callers.ts";
import { type ChainClient, createChainClient } from "./support/chain-client.ts";
import { type RunningServer, startServer } from "./support/start-server.ts";
import { createTransferOwner } from "./support/transfer-owner.ts";

const USDC = loadCatalog().tokens.find((t) => t.symbol === "USDC")?.mint as Address;

describe("PrepareApproval", () => {
  let server: RunningServer;
  let chain: ChainClient;
  let owners: ReturnType<typeof createTransferOwner>;

  beforeAll(async () => {
    server = await startServer();
    chain = createChainClient(server.localChain?.url as string);
    owners = createTransferOwner({ baseUrl: server.baseUrl, chain });
  });
  afterAll(async () => {
    await server?.close();
  });

  const agentFrom = async (source: Address): Promise<string> => {
    const destination = (await generateKeyPairSigner()).address;
    const created = await owners.ok("POST", "/v1/agents", {
      type: "transfer",
      config: { source, destination, amount: 1, token: "USDC", schedule: "daily" },
    });
    return created.agentId as string;
  };

  it("refuses a wallet with no token account for the token with failed_precondition saying so", async () => {
    const wallet = (await generateKeyPairSigner()).address;
    const agentId = await agentFrom(wallet);
    const refused = await owners.rest("POST", `/v1/agents/${agentId}:prepareApproval`, { allowance: 5 });
    expect(refused.status).toBe(400);
    expect(refused.json.code).toBe("failed_precondition");
    expect(refused.json.message).toMatch(
      new RegExp(
        `^the wallet ${wallet} has no USDC token account yet \\(its associated token account \\w+\\)`,
      ),
    );
    // The same over every protocol.
    for (const protocol of createProtocols(server.baseUrl)) {
      const outcome = await protocol.call(AgentService, "PrepareApproval", { agentId, allowance: 5 });
      expect(outcome.ok, protocol.name).toBe(false);
      if (!outcome.ok) {
        expect(outcome.code, protocol.name).toBe(Code.FailedPrecondition);
        expect(outcome.message, protocol.name).toContain(
          `the wallet ${wallet} has no USDC token account yet`,
        );
      }
      protocol.close();
    }

    // Once the wallet holds the token (an empty account is enough), the approval is given.
    await chain.setTokenBalance(wallet, USDC, 0n);
    const approval = await owners.ok("POST", `/v1/agents/${agentId}:prepareApproval`, { allowance: 5 });
    expect(approval).toMatchObject({ owner: wallet, mint: USDC, allowance: "5000000" });
  });

  it("refuses a frozen token account with failed_precondition", async () => {
    const wallet = (await generateKeyPairSigner()).address;
    const agentId = await agentFrom(wallet);
    const response = await chain.raw("surfnet_setTokenAccount", [
      wallet,
      USDC,
      { amount: 10, state: "frozen" },
    ]);
    expect(response).not.toHaveProperty("error");
    const refused = await owners.rest("POST", `/v1/agents/${agentId}:prepareApproval`, { allowance: 5 });
    expect([refused.status, refused.json.code]).toEqual([400, "failed_precondition"]);
    expect(refused.json.message).toMatch(/USDC token account \w+ is frozen/);
  });
});

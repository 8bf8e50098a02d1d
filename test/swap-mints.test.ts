/**
 * CreateAgent reads a swap's mints on the chain and refuses a Token-2022 mint with a transfer fee
 * or a transfer hook, naming the field, as Jupiter's own DCA does (the amount in would not arrive
 * whole; a hook runs anything on every transfer). The catalog's W mint is rewritten on the
 * embedded chain (surfpool's surfnet_setAccount) as a Token-2022 mint carrying the extension.
 */
import { type Address, generateKeyPairSigner, none, some } from "@solana/kit";
import { getMintEncoder, TOKEN_2022_PROGRAM_ADDRESS } from "@solana-program/token-2022";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadCatalog } from "../src/token/catalog.ts";
import { createChainClient } from "./support/chain-client.ts";
import { type RunningServer, startServer } from "./support/start-server.ts";

const tokens = loadCatalog().tokens;
const mintOf = (symbol: string) => tokens.find((t) => t.symbol === symbol)?.mint as Address;

describe("a swap's mints as CreateAgent reads them on the chain", () => {
  let server: RunningServer;
  let authority: Address;
  const create = async (outputToken: string) => {
    const res = await fetch(`${server.baseUrl}/v1/agents`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        type: "swap",
        config: {
          wallet: authority,
          inputToken: "USDC",
          outputToken,
          amount: 1,
          schedule: "daily",
        },
      }),
    });
    return { status: res.status, json: (await res.json()) as Record<string, unknown> };
  };
  const rewrite = async (symbol: string, extension: object) => {
    const data = getMintEncoder().encode({
      mintAuthority: some(authority),
      supply: 1_000_000_000n,
      decimals: tokens.find((t) => t.symbol === symbol)?.decimals ?? 6,
      isInitialized: true,
      freezeAuthority: none(),
      extensions: some([extension as never]),
    });
    const chain = createChainClient(server.localChain?.url as string);
    const answer = await chain.raw("surfnet_setAccount", [
      mintOf(symbol),
      { lamports: 10_000_000, data: Buffer.from(data).toString("hex"), owner: TOKEN_2022_PROGRAM_ADDRESS },
    ]);
    expect(answer.error).toBeUndefined();
  };

  beforeAll(async () => {
    server = await startServer();
    authority = (await generateKeyPairSigner()).address;
  });
  afterAll(() => server?.close());

  it("accepts the catalog's SPL mints", async () => {
    expect((await create("JUP")).status).toBe(200);
  });

  it("refuses an output mint with a transfer fee, naming config.outputToken", async () => {
    await rewrite("W", {
      __kind: "TransferFeeConfig",
      transferFeeConfigAuthority: authority,
      withdrawWithheldAuthority: authority,
      withheldAmount: 0n,
      olderTransferFee: { epoch: 0n, maximumFee: 0n, transferFeeBasisPoints: 100 },
      newerTransferFee: { epoch: 0n, maximumFee: 0n, transferFeeBasisPoints: 100 },
    });
    const refused = await create("W");
    expect(refused.status).toBe(400);
    expect(refused.json.code).toBe("invalid_argument");
    const violations = JSON.stringify(refused.json.details ?? refused.json);
    expect(violations).toContain("config.outputToken");
    expect(violations).toContain("takes a transfer fee (TransferFeeConfig)");
  });

  it("refuses an output mint with a transfer hook", async () => {
    await rewrite("POPCAT", { __kind: "TransferHook", authority, programId: authority });
    const refused = await create("POPCAT");
    expect(refused.status).toBe(400);
    expect(JSON.stringify(refused.json.details ?? refused.json)).toContain(
      "runs a transfer hook (TransferHook)",
    );
  });
});

/**
 * The kit transfer chain against the embedded local chain, over HTTP and in process: a send whose
 * preflight simulation fails is refused with the chain's own transaction error (what the executor
 * reads to fail a run with a reason) and lands nothing; one that passes is sent and lands; a send
 * without preflight goes out as is.
 */
import { type Address, generateKeyPairSigner, getBase64EncodedWireTransaction } from "@solana/kit";
import {
  findAssociatedTokenPda,
  getTransferCheckedInstruction,
  TOKEN_PROGRAM_ADDRESS,
} from "@solana-program/token";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PreflightFailure, type TransferChain } from "../src/chain/chain.ts";
import { createHttpTransport } from "../src/chain/http-transport.ts";
import { createKitTransferChain } from "../src/chain/kit-transfer-chain.ts";
import { type RunningLocalChain, startLocalChain } from "../src/local-chain/index.ts";
import { loadCatalog } from "../src/token/catalog.ts";
import { type ChainClient, createChainClient, signedTransaction } from "./support/chain-client.ts";

const catalog = loadCatalog();
const USDC = catalog.tokens.find((t) => t.symbol === "USDC")?.mint as Address;
let local: RunningLocalChain;
let client: ChainClient;

beforeAll(async () => {
  local = await startLocalChain({ catalog, port: 0, statePath: undefined, slotMs: 100 });
  client = createChainClient(local.url as string);
});
afterAll(async () => {
  await local?.close();
});

const ata = async (owner: Address) =>
  (await findAssociatedTokenPda({ owner, mint: USDC, tokenProgram: TOKEN_PROGRAM_ADDRESS }))[0];

describe.each([
  [
    "HTTP",
    () => createHttpTransport({ url: local.url as string, timeoutMs: 5000, maxResponseBytes: 1 << 22 }),
  ],
  ["in process", () => local.transport],
])("sending over %s", (_name, transport) => {
  let chain: TransferChain;
  beforeAll(() => {
    chain = createKitTransferChain({ transport: transport(), commitment: "confirmed" });
  });

  /** A signed transfer of `amount` USDC base units from a wallet holding 1 USDC to a fresh one. */
  const transfer = async (amount: bigint) => {
    const [from, to] = await Promise.all([generateKeyPairSigner(), generateKeyPairSigner()]);
    await client.airdrop(from.address, 1n);
    await client.setTokenBalance(from.address, USDC, 1_000_000n);
    await client.setTokenBalance(to.address, USDC, 0n);
    const { value: blockhash } = await client.rpc.getLatestBlockhash({ commitment: "confirmed" }).send();
    const [source, destination] = await Promise.all([ata(from.address), ata(to.address)]);
    const signed = await signedTransaction(from, blockhash, [
      getTransferCheckedInstruction({
        source,
        mint: USDC,
        destination,
        authority: from,
        amount,
        decimals: 6,
      }),
    ]);
    return { wire: getBase64EncodedWireTransaction(signed), to: to.address };
  };

  it("refuses a transfer over the balance with the chain's error, and nothing lands", async () => {
    const { wire, to } = await transfer(5_000_000n);
    const refused = await chain
      .sendTransaction(wire, undefined, { preflight: true })
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(PreflightFailure);
    // SPL Token's InsufficientFunds (1), in the cluster's JSON form.
    const err = (refused as PreflightFailure).err as { InstructionError: [unknown, { Custom: unknown }] };
    expect(Number(err.InstructionError[0])).toBe(0);
    expect(Number(err.InstructionError[1].Custom)).toBe(1);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const info = await chain.getTokenAccount(await ata(to));
    expect(info?.amount).toBe(0n);
  });

  it("sends a transfer that passes its preflight, and it lands", async () => {
    const { wire, to } = await transfer(250_000n);
    await chain.sendTransaction(wire, undefined, { preflight: true });
    for (let i = 0; i < 100 && (await chain.getTokenAccount(await ata(to)))?.amount !== 250_000n; i++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect((await chain.getTokenAccount(await ata(to)))?.amount).toBe(250_000n);
  });
});

/**
 * jsonParsed instructions on the local chain, from real transactions sent to it: an associated
 * token account created (its inner instructions, parsed), a transferChecked and a memo, in
 * getTransaction, getBlock and simulateTransaction, in the shapes Agave's solana-transaction-status
 * parser gives (and its documentation shows): `{program, programId, parsed: {type, info}, stackHeight}`,
 * token amounts as strings, `tokenAmount` for *Checked, the memo as a plain string, and other
 * programs as `{programId, accounts, data, stackHeight}`.
 */

import {
  type Address,
  address,
  generateKeyPairSigner,
  getBase58Decoder,
  getBase64EncodedWireTransaction,
  type Instruction,
  type KeyPairSigner,
} from "@solana/kit";
import { getTransferSolInstruction } from "@solana-program/system";
import {
  findAssociatedTokenPda,
  getCreateAssociatedTokenInstructionAsync,
  getTransferCheckedInstruction,
  TOKEN_PROGRAM_ADDRESS,
} from "@solana-program/token";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningLocalChain, startLocalChain } from "../src/local-chain/index.ts";
import { loadCatalog } from "../src/token/catalog.ts";
import { type ChainClient, createChainClient } from "./support/chain-client.ts";

// biome-ignore lint/suspicious/noExplicitAny: raw JSON-RPC answers, read by path and checked with toEqual.
type Raw = any;

const catalog = loadCatalog();
const USDC = address(catalog.tokens.find((t) => t.symbol === "USDC")?.mint as string);
const SYSTEM = "11111111111111111111111111111111";
const ATA_PROGRAM = "ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL";
const MEMO = address("MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr");
const COMPUTE_BUDGET = address("ComputeBudget111111111111111111111111111111");

let local: RunningLocalChain;
let chain: ChainClient;
let payer: KeyPairSigner;
let recipient: Address;
let payerAta: Address;
let recipientAta: Address;
let signature: string;

const ata = async (owner: Address) =>
  (await findAssociatedTokenPda({ owner, mint: USDC, tokenProgram: TOKEN_PROGRAM_ADDRESS }))[0];
const memo = (text: string): Instruction => ({
  programAddress: MEMO,
  accounts: [],
  data: new TextEncoder().encode(text),
});

async function signed(instructions: readonly Instruction[]): Promise<string> {
  return getBase64EncodedWireTransaction(await chain.sign(payer, instructions));
}

async function instructions(): Promise<Instruction[]> {
  return [
    await getCreateAssociatedTokenInstructionAsync({ payer, owner: recipient, mint: USDC }),
    getTransferCheckedInstruction({
      source: payerAta,
      mint: USDC,
      destination: recipientAta,
      authority: payer,
      amount: 1_500_000n,
      decimals: 6,
    }),
    memo("thanks for lunch 🦖"),
    // A program the parser does not know stays partially decoded (SetComputeUnitLimit, 200k).
    { programAddress: COMPUTE_BUDGET, accounts: [], data: COMPUTE_LIMIT_DATA },
  ];
}

beforeAll(async () => {
  local = await startLocalChain({ catalog, port: 0, statePath: undefined, slotMs: 400 });
  chain = createChainClient(local.url as string);
  payer = await generateKeyPairSigner();
  recipient = (await generateKeyPairSigner()).address;
  payerAta = await ata(payer.address);
  recipientAta = await ata(recipient);
  await chain.airdrop(payer.address, 10n);
  await chain.setTokenBalance(payer.address, USDC, 5_000_000n);
  signature = await chain.sendAndConfirm(payer, await instructions());
});
afterAll(async () => {
  await local?.close();
});

const stackHeight = (n: number | null) => n;
const ataCreate = () => ({
  program: "spl-associated-token-account",
  programId: ATA_PROGRAM,
  parsed: {
    type: "create",
    info: {
      source: payer.address,
      account: recipientAta,
      wallet: recipient,
      mint: USDC,
      systemProgram: SYSTEM,
      tokenProgram: TOKEN_PROGRAM_ADDRESS,
    },
  },
  stackHeight: null,
});
const transferChecked = () => ({
  program: "spl-token",
  programId: TOKEN_PROGRAM_ADDRESS,
  parsed: {
    type: "transferChecked",
    info: {
      source: payerAta,
      mint: USDC,
      destination: recipientAta,
      authority: payer.address,
      tokenAmount: { amount: "1500000", decimals: 6, uiAmount: 1.5, uiAmountString: "1.5" },
    },
  },
  stackHeight: null,
});
const memoParsed = {
  program: "spl-memo",
  programId: MEMO,
  parsed: "thanks for lunch 🦖",
  stackHeight: null,
};
const COMPUTE_LIMIT_DATA = new Uint8Array([2, 0x40, 0x0d, 0x03, 0]);
const computeBudget = {
  programId: COMPUTE_BUDGET,
  accounts: [],
  data: getBase58Decoder().decode(COMPUTE_LIMIT_DATA),
  stackHeight: null,
};
/** What the ATA program did inside: size the account, create it, make its owner immutable, initialize it. */
const ataInner = (height: number | null) => ({
  index: 0,
  instructions: [
    {
      program: "spl-token",
      programId: TOKEN_PROGRAM_ADDRESS,
      parsed: { type: "getAccountDataSize", info: { mint: USDC, extensionTypes: ["immutableOwner"] } },
      stackHeight: height,
    },
    {
      program: "system",
      programId: SYSTEM,
      parsed: {
        type: "createAccount",
        info: {
          source: payer.address,
          newAccount: recipientAta,
          lamports: 2_039_280,
          space: 165,
          owner: TOKEN_PROGRAM_ADDRESS,
        },
      },
      stackHeight: height,
    },
    {
      program: "spl-token",
      programId: TOKEN_PROGRAM_ADDRESS,
      parsed: { type: "initializeImmutableOwner", info: { account: recipientAta } },
      stackHeight: height,
    },
    {
      program: "spl-token",
      programId: TOKEN_PROGRAM_ADDRESS,
      parsed: { type: "initializeAccount3", info: { account: recipientAta, mint: USDC, owner: recipient } },
      stackHeight: height,
    },
  ],
});

describe("jsonParsed instructions", () => {
  it("getTransaction parses the ATA create, its inner instructions, the transferChecked and the memo", async () => {
    const { result } = (await chain.raw("getTransaction", [
      signature,
      { encoding: "jsonParsed", maxSupportedTransactionVersion: 0, commitment: "confirmed" },
    ])) as { result: Record<string, Raw> };
    expect(result.transaction.message.instructions).toEqual([
      ataCreate(),
      transferChecked(),
      memoParsed,
      computeBudget,
    ]);
    expect(result.meta.innerInstructions).toEqual([ataInner(stackHeight(2))]);
    expect(result.meta.loadedAddresses).toBeUndefined();
    expect(result.transaction.message.accountKeys[0]).toEqual({
      pubkey: payer.address,
      writable: true,
      signer: true,
      source: "transaction",
    });
    // kit's typed client decodes it (its jsonParsed types).
    const typed = await chain.rpc
      .getTransaction(signature as never, {
        encoding: "jsonParsed",
        maxSupportedTransactionVersion: 0,
        commitment: "confirmed",
      })
      .send();
    const second = typed?.transaction.message.instructions[1] as { parsed?: { type: string } };
    expect(second.parsed?.type).toBe("transferChecked");
  });

  it("getTransaction in json keeps them compiled, inner instructions in Agave's compiled shape", async () => {
    const { result } = (await chain.raw("getTransaction", [
      signature,
      { encoding: "json", maxSupportedTransactionVersion: 0, commitment: "confirmed" },
    ])) as { result: Record<string, Raw> };
    expect(result.transaction.message.instructions[2]).toEqual({
      programIdIndex: expect.any(Number),
      accounts: [],
      data: expect.any(String),
      stackHeight: null,
    });
    const [inner] = result.meta.innerInstructions;
    expect(inner.index).toBe(0);
    expect(inner.instructions).toHaveLength(4);
    expect(inner.instructions[1]).toEqual({
      programIdIndex: expect.any(Number),
      accounts: [0, expect.any(Number)],
      data: expect.any(String),
      stackHeight: 2,
    });
  });

  it("simulateTransaction gives parsed inner instructions (Agave parses them whatever the encoding)", async () => {
    const other = (await generateKeyPairSigner()).address;
    recipient = other;
    recipientAta = await ata(other);
    const { result } = (await chain.raw("simulateTransaction", [
      await signed(await instructions()),
      { encoding: "base64", innerInstructions: true, commitment: "confirmed" },
    ])) as { result: { value: Record<string, Raw> } };
    expect(result.value.err).toBeNull();
    expect(result.value.innerInstructions).toEqual([ataInner(stackHeight(2))]);
  });

  it("getBlock in jsonParsed shows the same parsed instructions", async () => {
    const { result: tx } = (await chain.raw("getTransaction", [
      signature,
      { encoding: "json", maxSupportedTransactionVersion: 0, commitment: "confirmed" },
    ])) as { result: { slot: number } };
    const { result: block } = (await chain.raw("getBlock", [
      tx.slot,
      { encoding: "jsonParsed", maxSupportedTransactionVersion: 0, commitment: "confirmed" },
    ])) as { result: { transactions: { transaction: Record<string, Raw>; meta: Record<string, Raw> }[] } };
    const mine = block.transactions.find((entry) => entry.transaction.signatures[0] === signature);
    const { result: parsed } = (await chain.raw("getTransaction", [
      signature,
      { encoding: "jsonParsed", maxSupportedTransactionVersion: 0, commitment: "confirmed" },
    ])) as { result: { transaction: unknown; meta: unknown } };
    expect(mine?.transaction).toEqual(parsed.transaction);
    expect(mine?.meta).toEqual(parsed.meta);
    expect(mine?.transaction.message.instructions[2]).toEqual(memoParsed);
    expect(mine?.meta.innerInstructions[0].instructions[1].parsed.type).toBe("createAccount");
  });

  it("a system transfer parses with lamports as an integer", async () => {
    const to = (await generateKeyPairSigner()).address;
    const sent = await chain.sendAndConfirm(payer, [
      getTransferSolInstruction({ source: payer, destination: to, amount: 1_000_000_000n }),
    ]);
    const { result } = (await chain.raw("getTransaction", [
      sent,
      { encoding: "jsonParsed", maxSupportedTransactionVersion: 0, commitment: "confirmed" },
    ])) as { result: Record<string, Raw> };
    expect(result.transaction.message.instructions).toEqual([
      {
        program: "system",
        programId: SYSTEM,
        parsed: {
          type: "transfer",
          info: { source: payer.address, destination: to, lamports: 1_000_000_000 },
        },
        stackHeight: null,
      },
    ]);
  });
});

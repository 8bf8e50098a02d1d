/**
 * The swap transaction as the builder lays it out, decoded back with kit: the run's own
 * instructions first, the route's setup less its no-op account creations (the accounts the run
 * creates itself), the route, the memo; the fee payer and the delegate as its only signers, both
 * signing; lookup tables used. Called directly: the flow on chain is test/swap-agent.test.ts.
 */
import { randomBytes } from "node:crypto";
import { getBase64Encoder, getCompiledTransactionMessageDecoder, getTransactionDecoder } from "@solana/kit";
import { ASSOCIATED_TOKEN_PROGRAM_ADDRESS, TOKEN_PROGRAM_ADDRESS } from "@solana-program/token";
import { describe, expect, it } from "vitest";
import { signingKeyFromSeed } from "../src/chain/ed25519-key.ts";
import {
  COMPUTE_BUDGET_PROGRAM,
  MEMO_PROGRAM,
  type PlainInstruction,
  swapAccountsOf,
  swapTransaction,
} from "../src/chain/swap-transaction.ts";
import { associatedTokenAccount } from "../src/chain/token-transactions.ts";

const key = () => signingKeyFromSeed(randomBytes(32));
const address = () => key().address;
const USDC = {
  mint: "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v",
  program: "spl-token",
  decimals: 6,
} as const;
const JUP = {
  mint: "JUPyiwrYJFskUPiHa7hkeR8VUtAeFoSYbKedZNsDvCN",
  program: "spl-token",
  decimals: 6,
} as const;

const createAta = (payer: string, ata: string, owner: string, mint: string): PlainInstruction => ({
  programAddress: ASSOCIATED_TOKEN_PROGRAM_ADDRESS,
  accounts: [
    { address: payer, signer: true, writable: true },
    { address: ata, signer: false, writable: true },
    { address: owner, signer: false, writable: false },
    { address: mint, signer: false, writable: false },
  ],
  data: new Uint8Array([1]),
});

describe("a swap's transaction", () => {
  it("lays out the run's instructions, drops the route's no-op creations, and has two signers", async () => {
    const feePayer = key();
    const delegate = key();
    const owner = address();
    const accounts = await swapAccountsOf(owner, delegate.address, USDC, JUP, associatedTokenAccount);
    const vault = address();
    const elsewhere = await associatedTokenAccount(delegate.address, JUP);
    const table = address();
    const swap: PlainInstruction = {
      programAddress: TOKEN_PROGRAM_ADDRESS,
      accounts: [
        { address: accounts.delegateInput, signer: false, writable: true },
        { address: USDC.mint, signer: false, writable: false },
        { address: vault, signer: false, writable: true },
        { address: delegate.address, signer: true, writable: false },
      ],
      data: new Uint8Array([12, 1, 0, 0, 0, 0, 0, 0, 0, 6]),
    };
    const built = await swapTransaction({
      feePayer,
      delegate,
      owner,
      input: USDC,
      output: JUP,
      amount: 1_500_000n,
      accounts,
      computeUnitLimit: 200_000,
      computeUnitPrice: 1_000n,
      setup: [
        // The two the run makes itself: no-ops, dropped.
        createAta(feePayer.address, accounts.ownerOutput, owner, JUP.mint),
        createAta(feePayer.address, accounts.delegateInput, delegate.address, USDC.mint),
        // Another account: kept.
        createAta(feePayer.address, elsewhere, delegate.address, JUP.mint),
      ],
      route: [swap],
      lookupTables: { [table]: [vault] },
      lifetime: { blockhash: address(), lastValidBlockHeight: 100n },
      memo: "token-agent-service run test",
    });
    expect(built.signers).toEqual([feePayer.address, delegate.address]);
    expect(built.size).toBeLessThanOrEqual(1232);
    const transaction = getTransactionDecoder().decode(getBase64Encoder().encode(built.transaction));
    expect(Object.values(transaction.signatures).every((s) => s !== null)).toBe(true);
    const message = getCompiledTransactionMessageDecoder().decode(transaction.messageBytes) as unknown as {
      staticAccounts: string[];
      instructions: { programAddressIndex: number }[];
      addressTableLookups?: { lookupTableAddress: string }[];
    };
    const keys = message.staticAccounts;
    const programs = message.instructions.map((ix) => keys[ix.programAddressIndex]);
    expect(programs).toEqual([
      COMPUTE_BUDGET_PROGRAM,
      COMPUTE_BUDGET_PROGRAM,
      ASSOCIATED_TOKEN_PROGRAM_ADDRESS, // the owner's output account
      ASSOCIATED_TOKEN_PROGRAM_ADDRESS, // the delegate's input account
      TOKEN_PROGRAM_ADDRESS, // transferChecked owner → delegate
      ASSOCIATED_TOKEN_PROGRAM_ADDRESS, // the route's one setup instruction that does something
      TOKEN_PROGRAM_ADDRESS, // the route
      MEMO_PROGRAM,
    ]);
    // The vault comes through the lookup table, not as a static key.
    expect(keys).not.toContain(vault);
    expect(message.addressTableLookups?.map((l) => l.lookupTableAddress)).toEqual([table]);
  });
});

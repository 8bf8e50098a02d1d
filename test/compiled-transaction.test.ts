/**
 * The service's message encoder (src/chain/compiled-transaction.ts) against kit's: the same bytes
 * for random compiled messages and for transactions as the service builds them (lookup tables,
 * a durable nonce, legacy), compiled by kit's compileTransactionMessage, and kit's own refusal
 * where a message cannot be written.
 */
import {
  AccountRole,
  type Address,
  appendTransactionMessageInstructions,
  type Blockhash,
  compileTransaction,
  compressTransactionMessageUsingAddressLookupTables,
  createTransactionMessage,
  getCompiledTransactionMessageEncoder,
  type Instruction,
  type Nonce,
  pipe,
  setTransactionMessageFeePayer,
  setTransactionMessageLifetimeUsingBlockhash,
  setTransactionMessageLifetimeUsingDurableNonce,
} from "@solana/kit";
import { describe, expect, it } from "vitest";
import { compiledMessageBytes, compiledTransaction } from "../src/chain/compiled-transaction.ts";
import { int, key, randomMessage } from "./support/random-messages.ts";

const kitEncoder = getCompiledTransactionMessageEncoder();

/** A random instruction: one of `programs` (never written, as kit requires), up to 12 accounts of `pool` in random roles (some repeated), data up to 300 bytes. */
function randomInstruction(programs: readonly Address[], pool: readonly Address[]): Instruction {
  const roles = [
    AccountRole.READONLY,
    AccountRole.WRITABLE,
    AccountRole.READONLY_SIGNER,
    AccountRole.WRITABLE_SIGNER,
  ];
  return {
    programAddress: programs[int(programs.length)] as Address,
    accounts: Array.from({ length: int(12) }, () => {
      const role = roles[int(int(3) === 0 ? 4 : 2)] as AccountRole;
      // Signers only among the pool's first four (with the fee payer, at most 5 signers: kit
      // refuses a transaction of more than 12), any role for the rest.
      const signer = role === AccountRole.READONLY_SIGNER || role === AccountRole.WRITABLE_SIGNER;
      return { address: pool[int(signer ? Math.min(4, pool.length) : pool.length)] as Address, role };
    }),
    ...(int(4) === 0
      ? {}
      : {
          data: new Uint8Array(
            Array.from({ length: [1, 9, 127, 128, 300][int(5)] as number }, () => int(256)),
          ),
        }),
  };
}

describe("compiledTransaction", () => {
  it("writes exactly kit's bytes for random compiled messages, legacy and v0, with and without lookups", () => {
    for (let i = 0; i < 500; i++) {
      const message = randomMessage(int(2) === 0 ? "legacy" : 0, 1 + int(3));
      expect(compiledMessageBytes(message as never)).toEqual(kitEncoder.encode(message as never));
    }
  });

  it("compiles messages built as the service builds them to kit's transaction: bytes, signers and lifetime", () => {
    for (let i = 0; i < 200; i++) {
      const pool = Array.from({ length: 4 + int(40) }, () => key(int(5) === 0 ? 1 : 0) as Address);
      const payer = key() as Address;
      const programs = Array.from({ length: 1 + int(3) }, () => key() as Address);
      const instructions = Array.from({ length: 1 + int(6) }, () => randomInstruction(programs, pool));
      const version = int(3) === 0 ? "legacy" : 0;
      const nonce = int(4) === 0;
      let message = pipe(
        createTransactionMessage({ version }),
        (m) => setTransactionMessageFeePayer(payer, m),
        (m) =>
          nonce
            ? setTransactionMessageLifetimeUsingDurableNonce(
                {
                  nonce: key() as string as Nonce,
                  nonceAccountAddress: key() as Address,
                  nonceAuthorityAddress: payer,
                },
                m,
              )
            : setTransactionMessageLifetimeUsingBlockhash(
                { blockhash: key() as string as Blockhash, lastValidBlockHeight: BigInt(int(1e9)) },
                m,
              ),
        (m) => appendTransactionMessageInstructions(instructions, m),
      );
      if (version === 0 && int(2) === 0) {
        // Tables that hold some of the instructions' accounts, as a swap route's do.
        const tables = Object.fromEntries(
          Array.from({ length: 1 + int(3) }, () => [key() as Address, pool.filter(() => int(2) === 0)]),
        );
        message = compressTransactionMessageUsingAddressLookupTables(
          message as never,
          tables,
        ) as typeof message;
      }
      const ours = compiledTransaction(message);
      const kits = compileTransaction(message);
      expect(ours.messageBytes).toEqual(kits.messageBytes);
      expect(ours.signatures).toEqual(kits.signatures);
      expect(Object.keys(ours.signatures)).toEqual(Object.keys(kits.signatures));
      expect((ours as { lifetimeConstraint?: unknown }).lifetimeConstraint).toEqual(
        (kits as { lifetimeConstraint?: unknown }).lifetimeConstraint,
      );
    }
  });

  it("leaves to kit what it cannot write, so kit's refusal is the answer", () => {
    const message = randomMessage(0, 1);
    const tooFar = {
      ...message,
      instructions: [{ programAddressIndex: 256, accountIndices: [0] }],
    };
    const refusal = (() => {
      try {
        kitEncoder.encode(tooFar as never);
      } catch (error) {
        return (error as Error).message;
      }
      return "no refusal";
    })();
    expect(refusal).not.toBe("no refusal");
    expect(() => compiledMessageBytes(tooFar as never)).toThrow(refusal);
    const badKey = { ...message, staticAccounts: ["not-base58!", ...message.staticAccounts.slice(1)] };
    expect(() => compiledMessageBytes(badKey as never)).toThrow();
  });
});

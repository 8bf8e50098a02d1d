/**
 * The embedded chain runs transactions on LiteSVM's binding with the bytes as sent
 * (svm-transactions.ts): the same simulations, post-accounts and sends as LiteSVM's own wrapper,
 * for legacy and v0 transactions, and the wrapper's refusal of a send with a signature missing.
 */
import {
  type Address,
  appendTransactionMessageInstructions,
  createTransactionMessage,
  generateKeyPairSigner,
  getTransactionEncoder,
  lamports,
  partiallySignTransactionMessageWithSigners,
  pipe,
  setTransactionMessageFeePayerSigner,
  setTransactionMessageLifetimeUsingBlockhash,
  type TransactionSigner,
} from "@solana/kit";
import { getTransferSolInstruction } from "@solana-program/system";
import { FailedTransactionMetadata, LiteSVM } from "litesvm";
import { describe, expect, it } from "vitest";
import { decodeWireTransaction, svmTransactions } from "../src/local-chain/index.ts";

const MEMO = "MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr" as Address;

async function transfer(
  svm: LiteSVM,
  payer: TransactionSigner,
  to: Address,
  version: "legacy" | 0,
  amount: bigint,
) {
  const message = pipe(
    createTransactionMessage({ version }),
    (m) => setTransactionMessageFeePayerSigner(payer, m),
    (m) =>
      setTransactionMessageLifetimeUsingBlockhash(
        { blockhash: svm.latestBlockhash(), lastValidBlockHeight: 1n },
        m,
      ),
    (m) =>
      appendTransactionMessageInstructions(
        [
          getTransferSolInstruction({ source: payer, destination: to, amount }),
          { programAddress: MEMO, data: new TextEncoder().encode(`${version} ${amount}`) },
        ],
        m,
      ),
  );
  const signed = await partiallySignTransactionMessageWithSigners(message);
  return decodeWireTransaction(new Uint8Array(getTransactionEncoder().encode(signed)), () => undefined);
}

describe("LiteSVM transactions on the bytes as sent", () => {
  it("simulate and send as the wrapper does", async () => {
    const payer = await generateKeyPairSigner();
    const to = (await generateKeyPairSigner()).address;
    const ours = new LiteSVM();
    const theirs = new LiteSVM();
    for (const svm of [ours, theirs]) svm.airdrop(payer.address, lamports(10_000_000_000n));
    const run = svmTransactions(ours);
    for (const [i, version] of (["legacy", 0, 0, "legacy"] as const).entries()) {
      // The last one asks for more than the payer has: a failed simulation and send.
      const amount = i === 3 ? 100_000_000_000n : BigInt(1_000_000 * (i + 1));
      const wire = await transfer(ours, payer, to, version, amount);
      const mine = run.simulate(wire);
      const expected = theirs.simulateTransaction(wire.transaction);
      expect(mine instanceof FailedTransactionMetadata).toBe(expected instanceof FailedTransactionMetadata);
      expect(mine.meta().logs()).toEqual(expected.meta().logs());
      if (!(mine instanceof FailedTransactionMetadata) && !(expected instanceof FailedTransactionMetadata)) {
        expect(mine.postAccounts().length).toBeGreaterThan(1);
        expect(mine.postAccounts()).toEqual(expected.postAccounts());
      }
      const sent = run.send(wire);
      const wrapperSent = theirs.sendTransaction(wire.transaction);
      expect(sent.toString()).toBe(wrapperSent.toString());
      expect(ours.getBalance(to)).toBe(theirs.getBalance(to));
      expect(ours.getBalance(payer.address)).toBe(theirs.getBalance(payer.address));
    }
    expect(ours.getBalance(to)).toBe(6_000_000n);
  });

  it("leave a send with a signature missing to the wrapper, which refuses it", async () => {
    const svm = new LiteSVM();
    const payer = await generateKeyPairSigner();
    svm.airdrop(payer.address, lamports(1_000_000_000n));
    const wire = await transfer(svm, payer, (await generateKeyPairSigner()).address, 0, 5n);
    const unsigned = decodeWireTransaction(
      new Uint8Array([...wire.bytes.subarray(0, 1), ...new Uint8Array(64), ...wire.bytes.subarray(65)]),
      () => undefined,
    );
    expect(() => svmTransactions(svm).send(unsigned)).toThrow(/signature/i);
  });
});

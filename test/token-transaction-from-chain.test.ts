/**
 * How a landed transaction reads as one entry of GetTokenTransactions: straight on the domain
 * function, with transactions written out as a cluster's meta gives them (token balances before and
 * after, by account index), so each rule fails here alone when it is broken.
 */
import { describe, expect, it } from "vitest";
import type { ChainTransaction, TokenBalance } from "../src/chain/chain.ts";
import { tokenTransactionFromChain, uiAmount } from "../src/token/token-transaction-from-chain.ts";

const USDC = "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v";
const BONK = "DezXAZ8z7PnrnRJjz3wXBoRgixCa6xjnB7YaB1pPB263";
const [ALICE, BOB, CAROL] = [
  "9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM",
  "2ojv9BAiHUrvsm9gxDe7fJSzbNZSJcxZvf8dqmWGHG8S",
  "7Ho35qYb6FCA8YfmhzamdVmjn877jS7TH8AG5UxRvi7V",
] as const;

/** A token balance line: account index, mint, owner, base units (USDC has 6 decimals, BONK 5). */
function balance(
  accountIndex: number,
  mint: string,
  owner: string | undefined,
  amount: bigint,
): TokenBalance {
  return { accountIndex, mint, owner, amount, decimals: mint === BONK ? 5 : 6 };
}

function tx(
  pre: TokenBalance[],
  post: TokenBalance[],
  extra: Partial<ChainTransaction> = {},
): ChainTransaction {
  return {
    signature: "5VERv8NMvzbJMEkV8xnrLkEaWRtSz9CosKDYjCJjBRnbJLgp8uirBgmQpjKhoR4tjF3ZpRzrFmBV6UjKdiSZkQUW",
    slot: 100n,
    blockTime: 1_790_000_000,
    failed: false,
    fee: 5000n,
    accountKeys: [ALICE, "token-account-1", "token-account-2", "token-account-3", USDC],
    preTokenBalances: pre,
    postTokenBalances: post,
    ...extra,
  };
}

describe("a transaction as one entry of a token's history", () => {
  it("a transfer: the owner whose balance fell sends, the one whose balance rose receives, in UI units", () => {
    const entry = tokenTransactionFromChain(
      tx(
        [balance(1, USDC, ALICE, 5_000_000n), balance(2, USDC, BOB, 0n)],
        [balance(1, USDC, ALICE, 3_900_000n), balance(2, USDC, BOB, 1_100_000n)],
      ),
      USDC,
    );
    expect(entry).toEqual({
      signature: expect.any(String),
      blockTime: 1_790_000_000,
      amount: 1.1,
      sender: ALICE,
      recipient: BOB,
      type: "transfer",
    });
  });

  it("counts a token account the transaction created from zero", () => {
    const entry = tokenTransactionFromChain(
      tx([balance(1, USDC, ALICE, 5n)], [balance(1, USDC, ALICE, 0n), balance(2, USDC, BOB, 5n)]),
      USDC,
    );
    expect([entry.amount, entry.sender, entry.recipient, entry.type]).toEqual([
      0.000005,
      ALICE,
      BOB,
      "transfer",
    ]);
  });

  it("a mint: tokens only appeared; no sender", () => {
    const entry = tokenTransactionFromChain(
      tx([balance(1, USDC, BOB, 0n)], [balance(1, USDC, BOB, 2_500_000n)]),
      USDC,
    );
    expect([entry.amount, entry.sender, entry.recipient, entry.type]).toEqual([2.5, "", BOB, "mint"]);
  });

  it("a burn: tokens only vanished; no recipient", () => {
    const entry = tokenTransactionFromChain(
      tx([balance(1, USDC, ALICE, 9n)], [balance(1, USDC, ALICE, 2n)]),
      USDC,
    );
    expect([entry.amount, entry.sender, entry.recipient, entry.type]).toEqual([0.000007, ALICE, "", "burn"]);
  });

  it("a swap: the sender of this token received another token in the same transaction", () => {
    const swap = tx(
      [
        balance(1, USDC, ALICE, 10_000_000n),
        balance(2, USDC, BOB, 0n),
        balance(3, BONK, ALICE, 0n),
        balance(4, BONK, BOB, 900n),
      ],
      [
        balance(1, USDC, ALICE, 0n),
        balance(2, USDC, BOB, 10_000_000n),
        balance(3, BONK, ALICE, 900n),
        balance(4, BONK, BOB, 0n),
      ],
    );
    expect(tokenTransactionFromChain(swap, USDC)).toMatchObject({
      amount: 10,
      sender: ALICE,
      recipient: BOB,
      type: "swap",
    });
    // The same transaction seen from the other token: Bob sent BONK and received USDC.
    expect(tokenTransactionFromChain(swap, BONK)).toMatchObject({
      amount: 0.009,
      sender: BOB,
      recipient: ALICE,
      type: "swap",
    });
  });

  it("another token moving the same way for the same owner is not a swap", () => {
    const both = tx(
      [balance(1, USDC, ALICE, 10n), balance(3, BONK, ALICE, 10n)],
      [
        balance(1, USDC, ALICE, 0n),
        balance(2, USDC, BOB, 10n),
        balance(3, BONK, ALICE, 0n),
        balance(4, BONK, BOB, 10n),
      ],
    );
    expect(tokenTransactionFromChain(both, USDC).type).toBe("transfer");
  });

  it("several movements are one entry: the total amount, the largest sender and recipient", () => {
    const entry = tokenTransactionFromChain(
      tx(
        [balance(1, USDC, ALICE, 10_000_000n)],
        [balance(1, USDC, ALICE, 0n), balance(2, USDC, BOB, 3_000_000n), balance(3, USDC, CAROL, 7_000_000n)],
      ),
      USDC,
    );
    expect([entry.amount, entry.sender, entry.recipient]).toEqual([10, ALICE, CAROL]);
  });

  it("adds up an owner's token accounts of the mint, and ties go to the smaller address", () => {
    const entry = tokenTransactionFromChain(
      tx(
        [balance(1, USDC, ALICE, 4n), balance(2, USDC, ALICE, 4n)],
        [
          balance(1, USDC, ALICE, 0n),
          balance(2, USDC, ALICE, 4n),
          balance(3, USDC, CAROL, 2n),
          balance(4, USDC, BOB, 2n),
        ],
      ),
      USDC,
    );
    expect([entry.amount, entry.sender, entry.recipient]).toEqual([0.000004, ALICE, [BOB, CAROL].sort()[0]]);
  });

  it("a token account without a recorded owner stands for its owner", () => {
    const entry = tokenTransactionFromChain(
      tx([balance(1, USDC, undefined, 3n)], [balance(1, USDC, undefined, 0n), balance(2, USDC, BOB, 3n)]),
      USDC,
    );
    expect(entry.sender).toBe("token-account-1");
  });

  it("a transaction that named the mint but moved none of it is `other`", () => {
    const entry = tokenTransactionFromChain(
      tx([balance(1, USDC, ALICE, 3n)], [balance(1, USDC, ALICE, 3n)]),
      USDC,
    );
    expect([entry.amount, entry.sender, entry.recipient, entry.type]).toEqual([0, "", "", "other"]);
  });

  it("a failed transaction moved nothing: `failed`, amount 0, its fee payer as sender", () => {
    const entry = tokenTransactionFromChain(
      tx([balance(1, USDC, ALICE, 3n)], [balance(1, USDC, ALICE, 3n)], { failed: true }),
      USDC,
    );
    expect([entry.amount, entry.sender, entry.recipient, entry.type]).toEqual([0, ALICE, "", "failed"]);
  });

  it("a block without a known time reads 0", () => {
    expect(tokenTransactionFromChain(tx([], [], { blockTime: null }), USDC).blockTime).toBe(0);
  });
});

describe("UI amounts", () => {
  it.each([
    [1_100_000n, 6, 1.1],
    [1n, 9, 0.000000001],
    // The largest u64: the double nearest to 18446744073.709551615.
    [18_446_744_073_709_551_615n, 9, Number("18446744073.709551615")],
    [0n, 6, 0],
    [123n, 0, 123],
    [-2_500_000n, 6, -2.5],
  ])("%s base units with %i decimals read %s", (units, decimals, expected) => {
    expect(uiAmount(units, decimals)).toBe(expected);
  });
});

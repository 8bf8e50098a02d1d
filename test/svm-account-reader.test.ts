/**
 * The embedded chain's account reads straight from LiteSVM's binding (svm-account-reader.ts) give
 * what LiteSVM's own wrapper gives, for accounts that exist (with owners whose base58 starts with
 * "1"s and without), accounts that do not, and balances.
 */
import { randomBytes } from "node:crypto";
import { type Address, getAddressDecoder, lamports } from "@solana/kit";
import { LiteSVM } from "litesvm";
import { describe, expect, it } from "vitest";
import { svmAccountReader } from "../src/local-chain/svm-account-reader.ts";

const decoder = getAddressDecoder();
const key = (zeros = 0) => {
  const bytes = randomBytes(32);
  bytes.fill(0, 0, zeros);
  return decoder.decode(bytes);
};

describe("LiteSVM accounts without the wrapper's base58", () => {
  it("are the wrapper's accounts and balances", () => {
    const svm = new LiteSVM();
    const reader = svmAccountReader(svm);
    for (let i = 0; i < 50; i++) {
      const address = key(i % 4 === 0 ? 1 : 0);
      svm.setAccount({
        address,
        executable: false,
        lamports: lamports(BigInt(1_000_000 + i)),
        programAddress: key(i % 3) as Address,
        space: BigInt(i),
        data: new Uint8Array(randomBytes(i)),
      });
      const expected = svm.getAccount(address);
      expect(reader.account(address)).toEqual(expected);
      expect(reader.balance(address)).toBe(svm.getBalance(address));
    }
    const missing = key();
    expect(svm.getAccount(missing as Address).exists).toBe(false);
    expect(reader.account(missing)).toBeUndefined();
    expect(reader.balance(missing)).toBe(svm.getBalance(missing as Address) ?? undefined);
    expect(() => reader.account("not an address")).toThrow(TypeError);
  });
});

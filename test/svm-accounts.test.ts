/**
 * The embedded chain's account reads and writes straight to LiteSVM's binding (svm-accounts.ts)
 * give and keep what LiteSVM's own wrapper does, for accounts that exist (with owners whose base58
 * starts with "1"s and without), accounts that do not, and balances.
 */
import { randomBytes } from "node:crypto";
import { type Address, getAddressDecoder, lamports } from "@solana/kit";
import { LiteSVM } from "litesvm";
import { describe, expect, it } from "vitest";
import { svmAccounts } from "../src/local-chain/index.ts";

const decoder = getAddressDecoder();
const key = (zeros = 0) => {
  const bytes = randomBytes(32);
  bytes.fill(0, 0, zeros);
  return decoder.decode(bytes);
};

describe("LiteSVM accounts without the wrapper's base58", () => {
  it("are the wrapper's accounts and balances", () => {
    const svm = new LiteSVM();
    const reader = svmAccounts(svm);
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

  it("write what the wrapper writes", () => {
    const svm = new LiteSVM();
    const accounts = svmAccounts(svm);
    for (let i = 0; i < 50; i++) {
      const address = key(i % 4 === 0 ? 1 : 0);
      const account = {
        lamports: BigInt(1_000_000 + i),
        programAddress: key(i % 3),
        data: new Uint8Array(randomBytes(i)),
        executable: false,
      };
      accounts.put(address, account);
      expect(svm.getAccount(address as Address)).toEqual({
        exists: true,
        address,
        ...account,
        lamports: lamports(account.lamports),
        space: BigInt(i),
      });
    }
    const account = { lamports: 1n, programAddress: key(), data: new Uint8Array(0), executable: false };
    expect(() => accounts.put("not an address", account)).toThrow(TypeError);
    // What LiteSVM refuses, it refuses here too: an executable account it cannot load.
    const program = {
      ...account,
      programAddress: "BPFLoaderUpgradeab1e11111111111111111111111",
      executable: true,
    };
    expect(() =>
      svm.setAccount({
        address: key() as Address,
        ...program,
        lamports: lamports(1n),
        programAddress: program.programAddress as Address,
        space: 0n,
      }),
    ).toThrow();
    expect(() => accounts.put(key(), program)).toThrow();
  });
});

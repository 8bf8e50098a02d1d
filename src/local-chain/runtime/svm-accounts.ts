import type { Address } from "@solana/kit";
import { Account, type LiteSVM } from "litesvm";
import { addressBytes, base58Address } from "../../chain/base58-address.ts";

/** An account as LiteSVM's getAccount gives one that exists. */
export type SvmAccount = Extract<ReturnType<LiteSVM["getAccount"]>, { exists: true }>;

/** The native account LiteSVM's binding hands its wrapper. */
interface NativeAccount {
  data(): Uint8Array;
  executable(): boolean;
  lamports(): bigint;
  owner(): Uint8Array;
}

/** An account as the chain writes one into LiteSVM. */
export interface SvmAccountWrite {
  readonly lamports: bigint;
  readonly programAddress: string;
  readonly data: Uint8Array;
  readonly executable: boolean;
}

/**
 * LiteSVM's getAccount, getBalance and setAccount, without its wrapper's BigInt base58: the
 * wrapper turns each address into bytes and each owner back into text through kit's codec, and
 * the chain reads every account a transaction names before and after it runs, and writes one for
 * every cheatcode (the swap bench's profiles put the codec among the embedded chain's largest
 * costs and allocations). Straight to the binding, with the byte-array codec (base58-address.ts);
 * the same shapes. Should a LiteSVM release move its binding, the wrapper's own methods serve.
 */
export function svmAccounts(svm: LiteSVM): {
  account: (address: string) => SvmAccount | undefined;
  balance: (address: string) => bigint | undefined;
  /** Writes the account as given (rentEpoch 0, as the wrapper writes it); LiteSVM's refusal throws. */
  put: (address: string, account: SvmAccountWrite) => void;
} {
  const native = (svm as unknown as { inner?: Record<string, unknown> }).inner;
  const getAccount = native?.getAccount;
  const getBalance = native?.getBalance;
  const setAccount = native?.setAccount;
  if (
    typeof getAccount !== "function" ||
    typeof getBalance !== "function" ||
    typeof setAccount !== "function"
  ) {
    return {
      account: (address) => {
        const account = svm.getAccount(address as Address);
        return account.exists ? account : undefined;
      },
      balance: (address) => svm.getBalance(address as Address) ?? undefined,
      put: (address, account) =>
        svm.setAccount({
          address: address as Address,
          lamports: account.lamports as never,
          programAddress: account.programAddress as Address,
          data: account.data,
          executable: account.executable,
          space: BigInt(account.data.length),
        }),
    };
  }
  return {
    account(address) {
      const account = getAccount.call(native, addressBytes(address)) as NativeAccount | null;
      if (account === null) return undefined;
      const data = account.data();
      return {
        exists: true,
        address: address as Address,
        executable: account.executable(),
        lamports: account.lamports() as SvmAccount["lamports"],
        programAddress: base58Address(account.owner()) as Address,
        space: BigInt(data.length),
        data,
      } as SvmAccount;
    },
    balance(address) {
      return (getBalance.call(native, addressBytes(address)) as bigint | null) ?? undefined;
    },
    put(address, account) {
      setAccount.call(
        native,
        addressBytes(address),
        new Account(
          account.lamports,
          account.data,
          addressBytes(account.programAddress),
          account.executable,
          0n,
        ),
      );
    },
  };
}

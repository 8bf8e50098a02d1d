import type { Address, ReadonlyUint8Array } from "@solana/kit";
import { getTokenDecoder as getClassicTokenDecoder, TOKEN_PROGRAM_ADDRESS } from "@solana-program/token";
import {
  getMintDecoder as getToken2022MintDecoder,
  getTokenDecoder as getToken2022TokenDecoder,
  TOKEN_2022_PROGRAM_ADDRESS,
  type Mint as Token2022Mint,
  type Token as Token2022Token,
} from "@solana-program/token-2022";
import { addressBytes, base58Address } from "../../chain/base58-address.ts";

/** The two token programs, by the name JSON-RPC's jsonParsed gives them. */
export const TOKEN_PROGRAMS: Readonly<Record<string, "spl-token" | "spl-token-2022">> = {
  [TOKEN_PROGRAM_ADDRESS]: "spl-token",
  [TOKEN_2022_PROGRAM_ADDRESS]: "spl-token-2022",
};

// Codecs hold no state; made once, as each costs more to make than to use.
const classicTokenDecoder = getClassicTokenDecoder();
const token2022TokenDecoder = getToken2022TokenDecoder();
const token2022MintDecoder = getToken2022MintDecoder();
const MINT_SIZE = 82;
const ACCOUNT_SIZE = 165;
const ACCOUNT_TYPE_MINT = 1;
const ACCOUNT_TYPE_ACCOUNT = 2;

/** What the local chain reads an account as: lamports, owner and data, as LiteSVM holds it. */
export interface RawAccount {
  readonly lamports: bigint;
  readonly programAddress: Address;
  readonly data: ReadonlyUint8Array;
  readonly executable: boolean;
}

export type MintState = Token2022Mint & { readonly program: Address };
export type TokenAccountState = Token2022Token & { readonly program: Address };

/**
 * The kind of a token program's account, as the program itself tells them apart: by size for the
 * base layouts, and for longer Token-2022 accounts by the account type byte after the base.
 */
function kindOf(account: RawAccount): "mint" | "account" | undefined {
  if (TOKEN_PROGRAMS[account.programAddress] === undefined) return undefined;
  const size = account.data.length;
  if (size === MINT_SIZE) return "mint";
  if (size === ACCOUNT_SIZE) return "account";
  if (account.programAddress !== TOKEN_2022_PROGRAM_ADDRESS || size <= ACCOUNT_SIZE) return undefined;
  const type = account.data[ACCOUNT_SIZE];
  return type === ACCOUNT_TYPE_MINT ? "mint" : type === ACCOUNT_TYPE_ACCOUNT ? "account" : undefined;
}

/** The mint in `account`, decoded with Token-2022's codec (a superset of SPL Token's). */
export function readMint(account: RawAccount | undefined): MintState | undefined {
  if (account === undefined || kindOf(account) !== "mint") return undefined;
  try {
    const mint = token2022MintDecoder.decode(account.data);
    return mint.isInitialized ? { ...mint, program: account.programAddress } : undefined;
  } catch {
    return undefined;
  }
}

/** The token account in `account`, or undefined when it is not an initialized one. */
export function readTokenAccount(account: RawAccount | undefined): TokenAccountState | undefined {
  if (account === undefined) return undefined;
  // The token index hands out the same account objects until they are written again: each is
  // decoded once (base58 of its mint, owner and delegate was most of a token scan's time).
  if (decoded.has(account)) return decoded.get(account);
  const token = decodeTokenAccount(account);
  decoded.set(account, token);
  return token;
}

/**
 * Token accounts as decoded, by the account object read: a memo of a pure function, held weakly
 * (an account read and dropped takes its decoding with it).
 */
const decoded = new WeakMap<RawAccount, TokenAccountState | undefined>();

function decodeTokenAccount(account: RawAccount): TokenAccountState | undefined {
  if (kindOf(account) !== "account") return undefined;
  if (account.data.length === ACCOUNT_SIZE) return baseTokenAccount(account);
  try {
    const token =
      account.programAddress === TOKEN_PROGRAM_ADDRESS
        ? { ...classicTokenDecoder.decode(account.data), extensions: { __option: "None" as const } }
        : token2022TokenDecoder.decode(account.data);
    return token.state === 0 ? undefined : { ...token, program: account.programAddress };
  } catch {
    return undefined;
  }
}

/** JSON-RPC's UiTokenAmount: base units as text, and the amount in UI units. */
export interface UiTokenAmount {
  readonly amount: string;
  readonly decimals: number;
  readonly uiAmount: number | null;
  readonly uiAmountString: string;
}

export function uiTokenAmount(amount: bigint, decimals: number): UiTokenAmount {
  const uiAmountString = decimalString(amount, decimals);
  return { amount: amount.toString(), decimals, uiAmount: Number(uiAmountString), uiAmountString };
}

/** Base units shifted by `decimals`, without trailing zeros ("1.5", "0", "1000"), as Agave writes it. */
export function decimalString(amount: bigint, decimals: number): string {
  if (decimals === 0) return amount.toString();
  const digits = amount.toString().padStart(decimals + 1, "0");
  const whole = digits.slice(0, -decimals);
  const fraction = digits.slice(-decimals).replace(/0+$/, "");
  return fraction === "" ? whole : `${whole}.${fraction}`;
}

/**
 * A token account of the base layout (165 bytes, either program), read by hand as the codecs
 * would: kit's decoders read mint, owner and delegate through BigInt base58 and a decoder object
 * per field, and the chain reads every token account a transaction names before and after it
 * runs. The same object as decodeTokenAccount's codecs give (test/token-account-bytes.test.ts):
 * an option is Some only when its u32 tag is exactly 1, and a state past Frozen is no account.
 */
function baseTokenAccount(account: RawAccount): TokenAccountState | undefined {
  const data = account.data as Uint8Array;
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  const state = data[108] as number;
  // Uninitialized is no account; a state the program does not know is a decoding error.
  if (state === 0 || state > 2) return undefined;
  const optionOf = <T>(at: number, value: () => T) =>
    view.getUint32(at, true) === 1
      ? { __option: "Some" as const, value: value() }
      : { __option: "None" as const };
  const address = (at: number) => base58Address(data.subarray(at, at + 32)) as Address;
  return {
    mint: address(0),
    owner: address(32),
    amount: view.getBigUint64(64, true),
    delegate: optionOf(72, () => address(76)),
    state,
    isNative: optionOf(109, () => view.getBigUint64(113, true)),
    delegatedAmount: view.getBigUint64(121, true),
    closeAuthority: optionOf(129, () => address(133)),
    extensions: { __option: "None" },
    program: account.programAddress,
  };
}

/** What a base-layout token account holds, as surfnet_setTokenAccount writes one. */
export interface TokenAccountFields {
  readonly mint: string;
  readonly owner: string;
  readonly amount: bigint;
  readonly delegate: string | undefined;
  readonly state: number;
  readonly isNative: bigint | undefined;
  readonly delegatedAmount: bigint;
  readonly closeAuthority: string | undefined;
}

/**
 * The 165 bytes of a base-layout token account, written by hand as kit's getTokenEncoder writes
 * them (test/transaction-bytes.test.ts): its encoder reads every key through BigInt base58, and
 * the test Swap API's routes set a pool's vault by cheatcode for every swap.
 */
export function tokenAccountBytes(token: TokenAccountFields): Uint8Array {
  const data = new Uint8Array(ACCOUNT_SIZE);
  const view = new DataView(data.buffer);
  const key = (at: number, address: string) => data.set(addressBytes(address), at);
  key(0, token.mint);
  key(32, token.owner);
  view.setBigUint64(64, token.amount, true);
  if (token.delegate !== undefined) {
    view.setUint32(72, 1, true);
    key(76, token.delegate);
  }
  data[108] = token.state;
  if (token.isNative !== undefined) {
    view.setUint32(109, 1, true);
    view.setBigUint64(113, token.isNative, true);
  }
  view.setBigUint64(121, token.delegatedAmount, true);
  if (token.closeAuthority !== undefined) {
    view.setUint32(129, 1, true);
    key(133, token.closeAuthority);
  }
  return data;
}

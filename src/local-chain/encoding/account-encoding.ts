import { zstdCompressSync } from "node:zlib";
import { getAddressDecoder, getBase58Decoder } from "@solana/kit";
import type { AnswerBudget } from "../rpc/answer-budget.ts";
import { invalidParams, JsonRpcError } from "../rpc/json-rpc-error.ts";
import { invalidType, u64Param, usizeParam } from "../rpc/rpc-params.ts";
import { type ChainAccount, RENT_EXEMPT_EPOCH } from "../runtime/chain-account.ts";
import {
  type MintState,
  type RawAccount,
  readMint,
  readTokenAccount,
  TOKEN_PROGRAMS,
  type TokenAccountState,
  uiTokenAmount,
} from "../runtime/token-accounts.ts";
import { parsedAccountData } from "./parse-account.ts";

export type AccountEncoding = "binary" | "base58" | "base64" | "base64+zstd" | "jsonParsed";

/** base58 is slow: Agave refuses it for data longer than this. */
const MAX_BASE58_BYTES = 128;
/** About what an account's JSON holds besides its data (lamports, owner, rentEpoch, ...). */
const ACCOUNT_FIELDS_BYTES = 200;

export function encodingOf(config: Record<string, unknown>, fallback: AccountEncoding): AccountEncoding {
  const value = config.encoding;
  if (value === undefined || value === null) return fallback;
  if (
    value === "binary" ||
    value === "base58" ||
    value === "base64" ||
    value === "base64+zstd" ||
    value === "jsonParsed"
  ) {
    return value;
  }
  if (value === "json")
    throw invalidParams(
      "unknown variant `json`, expected one of `binary`, `base58`, `base64`, `jsonParsed`, `base64+zstd`",
    );
  if (typeof value === "string") {
    throw invalidParams(
      `unknown variant \`${value}\`, expected one of \`binary\`, \`base58\`, \`base64\`, \`jsonParsed\`, \`base64+zstd\``,
    );
  }
  throw invalidType(value, "an account encoding");
}

export interface DataSlice {
  readonly offset: number;
  readonly length: number;
}

export function dataSliceOf(config: Record<string, unknown>): DataSlice | undefined {
  const value = config.dataSlice;
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "object" || Array.isArray(value)) throw invalidType(value, "struct UiDataSliceConfig");
  const { offset, length } = value as Record<string, unknown>;
  if (offset === undefined) throw invalidParams("missing field `offset`");
  if (length === undefined) throw invalidParams("missing field `length`");
  return { offset: usizeParam(offset), length: usizeParam(length) };
}

/**
 * An account as getAccountInfo, getMultipleAccounts and getTokenAccountsByOwner answer it: its
 * data in the asked encoding (jsonParsed for SPL Token and Token-2022 mints and accounts, falling
 * back to base64 for anything else), lamports, owner, executable, rentEpoch and space. Its size
 * is charged to `answer` before the data is encoded.
 */
export function accountJson(
  account: RawAccount,
  encoding: AccountEncoding,
  slice: DataSlice | undefined,
  readAccount: (address: string) => RawAccount | undefined,
  answer: AnswerBudget,
  /** The account's address, which jsonParsed needs to tell one sysvar from another. */
  address?: string,
): Record<string, unknown> {
  answer.charge(ACCOUNT_FIELDS_BYTES);
  const base = {
    lamports: account.lamports,
    owner: account.programAddress,
    executable: account.executable,
    rentEpoch: (account as ChainAccount).rentEpoch ?? RENT_EXEMPT_EPOCH,
    space: account.data.length,
  };
  if (encoding === "jsonParsed") {
    let parsed = parsedTokenData(account, readAccount);
    if (parsed === undefined) {
      parsed = parsedAccountData(account, address);
      // A parsed program account can carry the program itself (base64): charged as base64 is.
      if (parsed !== undefined) answer.charge(base64Length(account.data.length));
    }
    if (parsed !== undefined) return { data: parsed, ...base };
  }
  const whole = account.data as Uint8Array;
  const data = slice === undefined ? whole : whole.subarray(slice.offset, slice.offset + slice.length);
  return { data: encodeData(data, encoding === "jsonParsed" ? "base64" : encoding, answer), ...base };
}

/** base64's length for `bytes` bytes. */
const base64Length = (bytes: number) => 4 * Math.ceil(bytes / 3);

function encodeData(
  data: Uint8Array,
  encoding: Exclude<AccountEncoding, "jsonParsed">,
  answer: AnswerBudget,
): unknown {
  switch (encoding) {
    case "binary":
    case "base58": {
      if (data.length > MAX_BASE58_BYTES) {
        throw new JsonRpcError(
          -32600,
          `Encoded binary (base 58) data should be less than ${MAX_BASE58_BYTES} bytes, please use Base64 encoding.`,
        );
      }
      const text = getBase58Decoder().decode(data);
      return encoding === "binary" ? text : [text, "base58"];
    }
    case "base64":
      answer.charge(base64Length(data.length));
      return [Buffer.from(data).toString("base64"), "base64"];
    case "base64+zstd": {
      const compressed = zstdCompressSync(data);
      answer.charge(base64Length(compressed.length));
      return [compressed.toString("base64"), "base64+zstd"];
    }
  }
}

/** jsonParsed data of a token program's mint or account, or undefined for any other account. */
export function parsedTokenData(
  account: RawAccount,
  readAccount: (address: string) => RawAccount | undefined,
): unknown {
  const program = TOKEN_PROGRAMS[account.programAddress];
  if (program === undefined) return undefined;
  const space = account.data.length;
  const multisig = multisigInfo(account.data as Uint8Array);
  if (multisig !== undefined) return { program, parsed: { info: multisig, type: "multisig" }, space };
  const mint = readMint(account);
  if (mint !== undefined) return { program, parsed: { info: mintInfo(mint), type: "mint" }, space };
  const token = readTokenAccount(account);
  if (token === undefined) return undefined;
  const decimals = readMint(readAccount(token.mint))?.decimals;
  if (decimals === undefined) return undefined;
  return { program, parsed: { info: tokenAccountInfo(token, decimals), type: "account" }, space };
}

/** A token program's Multisig (355 bytes: m, n, initialized, 11 signers), as parse_token.rs shows it. */
const MULTISIG_SIZE = 355;
const addressDecoder = getAddressDecoder();
function multisigInfo(data: Uint8Array): Record<string, unknown> | undefined {
  if (data.length !== MULTISIG_SIZE || data[2] !== 1) return undefined;
  const signers: string[] = [];
  for (let at = 3; at < MULTISIG_SIZE; at += 32) {
    const key = data.subarray(at, at + 32);
    // Unused slots hold the default (all-zero) key, which Agave leaves out.
    if (key.some((byte) => byte !== 0)) signers.push(addressDecoder.decode(key));
  }
  return { numRequiredSigners: data[0], numValidSigners: data[1], isInitialized: true, signers };
}

function mintInfo(mint: MintState): Record<string, unknown> {
  const extensions = extensionsJson(mint.extensions);
  return {
    mintAuthority: optionValue(mint.mintAuthority),
    supply: mint.supply.toString(),
    decimals: mint.decimals,
    isInitialized: mint.isInitialized,
    freezeAuthority: optionValue(mint.freezeAuthority),
    ...(extensions.length === 0 ? {} : { extensions }),
  };
}

function tokenAccountInfo(token: TokenAccountState, decimals: number): Record<string, unknown> {
  const native = token.isNative.__option === "Some";
  const delegate = optionValue(token.delegate);
  const closeAuthority = optionValue(token.closeAuthority);
  const extensions = extensionsJson(token.extensions);
  return {
    isNative: native,
    mint: token.mint,
    owner: token.owner,
    state: token.state === 2 ? "frozen" : "initialized",
    tokenAmount: uiTokenAmount(token.amount, decimals),
    ...(delegate === null
      ? {}
      : { delegate, delegatedAmount: uiTokenAmount(token.delegatedAmount, decimals) }),
    ...(native && token.isNative.__option === "Some"
      ? { rentExemptReserve: uiTokenAmount(token.isNative.value, 9) }
      : {}),
    ...(closeAuthority === null ? {} : { closeAuthority }),
    ...(extensions.length === 0 ? {} : { extensions }),
  };
}

type Extensions = MintState["extensions"] | TokenAccountState["extensions"];

/**
 * Token-2022 extensions as jsonParsed shows them: `{extension, state}` with the extension's name
 * and fields in camelCase. The metadata ones, which wallets read, are written out field by field;
 * the rest follow the decoded layout's own field names.
 */
function extensionsJson(extensions: Extensions): unknown[] {
  if (extensions.__option === "None") return [];
  return extensions.value.map((extension) => {
    const { __kind: kind, ...fields } = extension as { __kind: string } & Record<string, unknown>;
    const name = kind.charAt(0).toLowerCase() + kind.slice(1);
    if (kind === "TokenMetadata") {
      const metadata = fields as {
        updateAuthority: unknown;
        mint: string;
        name: string;
        symbol: string;
        uri: string;
        additionalMetadata: Map<string, string> | unknown;
      };
      return {
        extension: name,
        state: {
          updateAuthority: optionValue(metadata.updateAuthority),
          mint: metadata.mint,
          name: metadata.name,
          symbol: metadata.symbol,
          uri: metadata.uri,
          additionalMetadata:
            metadata.additionalMetadata instanceof Map ? [...metadata.additionalMetadata.entries()] : [],
        },
      };
    }
    if (Object.keys(fields).length === 0) return { extension: name };
    return { extension: name, state: plainJson(fields) };
  });
}

/** A decoded codec value as JSON: options become their value or null, bigints stay exact. */
function plainJson(value: unknown): unknown {
  if (value === null || typeof value !== "object") return value;
  if (value instanceof Uint8Array) return Buffer.from(value).toString("base64");
  if (Array.isArray(value)) return value.map(plainJson);
  if ("__option" in value) return optionValue(value as { __option: string; value?: unknown });
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, plainJson(v)]));
}

function optionValue(option: unknown): unknown {
  const value = option as { __option?: string; value?: unknown } | null | undefined;
  if (value === null || value === undefined) return null;
  if (value.__option === "None") return null;
  if (value.__option === "Some") return plainJson(value.value);
  return value;
}

/** u64 config values that some methods take as numbers. */
export function optionalU64(value: unknown): bigint | undefined {
  return value === undefined || value === null ? undefined : u64Param(value);
}

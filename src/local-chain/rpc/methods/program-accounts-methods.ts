import { getBase58Decoder, getBase58Encoder } from "@solana/kit";
import { accountJson, dataSliceOf, encodingOf } from "../../encoding/account-encoding.ts";
import type { LocalChain } from "../../runtime/local-chain.ts";
import { readOnce, type TokenAccountIndex } from "../../runtime/token-account-index.ts";
import {
  type RawAccount,
  readMint,
  readTokenAccount,
  TOKEN_PROGRAMS,
  uiTokenAmount,
} from "../../runtime/token-accounts.ts";
import { invalidParam, invalidParams, paramError } from "../json-rpc-error.ts";
import type { RpcMethod } from "../json-rpc-handler.ts";
import {
  booleanOf,
  configParam,
  contextSlotOf,
  invalidType,
  pubkeyParam,
  requireParams,
  u64Param,
  usizeParam,
  withContext,
} from "../rpc-params.ts";
import { bareCommitment } from "./account-methods.ts";
import { delegateOf, sortByAddress, tokenAccountsBy } from "./token-accounts-by.ts";

/** Agave's bounds on getProgramAccounts' filters (MAX_GET_PROGRAM_ACCOUNT_FILTERS, rpc-client-api's filter.rs). */
const MAX_FILTERS = 4;
const MAX_DATA_SIZE = 128;
const MAX_DATA_BASE58_SIZE = 175;
const MAX_DATA_BASE64_SIZE = 172;
/** getTokenLargestAccounts answers the 20 largest (NUM_LARGEST_ACCOUNTS). */
const NUM_LARGEST_ACCOUNTS = 20;

/** A filter, with what the token index can use of it (a memcmp's bytes, a dataSize, tokenAccountState). */
type AccountFilter = ((account: RawAccount) => boolean) & {
  readonly memcmp?: { readonly offset: number; readonly bytes: Uint8Array };
  readonly dataSize?: bigint;
  readonly tokenAccountState?: true;
};
/** Where a token account holds its mint and its owner, the memcmps the token index answers. */
const MINT_OFFSET = 0;
const OWNER_OFFSET = 32;
const TOKEN_ACCOUNT_SIZE = 165n;

/**
 * Scans by program: getProgramAccounts (memcmp, dataSize and tokenAccountState filters,
 * withContext, every account encoding, sorted by address as Agave's sortResults does by default),
 * getTokenLargestAccounts and getTokenAccountsByDelegate. Answers are bounded by the answer
 * budget each account's data is charged to.
 */
export function programAccountsMethods(
  chain: LocalChain,
  tokenIndex?: TokenAccountIndex,
): Record<string, RpcMethod> {
  const base58 = getBase58Decoder();

  /**
   * The accounts a token program's scan can be answered from through the index: those of the
   * memcmp's mint or owner, when the filters also keep to token accounts (dataSize 165 or
   * tokenAccountState), so that what the index holds (token accounts) is all the scan could match.
   */
  const indexed = (program: string, filters: readonly AccountFilter[]) => {
    if (tokenIndex === undefined || TOKEN_PROGRAMS[program] === undefined) return undefined;
    if (!filters.some((f) => f.tokenAccountState === true || f.dataSize === TOKEN_ACCOUNT_SIZE))
      return undefined;
    for (const { memcmp } of filters) {
      if (memcmp === undefined || memcmp.bytes.length !== 32) continue;
      const field =
        memcmp.offset === MINT_OFFSET ? "mint" : memcmp.offset === OWNER_OFFSET ? "owner" : undefined;
      if (field !== undefined) return tokenIndex.accounts(program, field, base58.decode(memcmp.bytes));
    }
    return undefined;
  };

  return {
    getProgramAccounts(params, answer) {
      requireParams(params, 1);
      const program = pubkeyParam(params[0], "program_id");
      const config = configParam(params, 1);
      const encoding = encodingOf(config, "binary");
      const slice = dataSliceOf(config);
      const withContextFlag = booleanOf(config, "withContext", false);
      const sortResults = booleanOf(config, "sortResults", true);
      const filters = filtersOf(config.filters);
      const slot = contextSlotOf(chain, config);
      const found = (indexed(program, filters) ?? chain.programAccounts(program)).filter(({ account }) =>
        filters.every((matches) => matches(account)),
      );
      if (sortResults) sortByAddress(found);
      const read = readOnce(chain.account);
      const value = found.map(({ address, account }) => ({
        pubkey: address,
        account: accountJson(account, encoding, slice, read, answer),
      }));
      return withContextFlag ? withContext(slot, value) : value;
    },

    getTokenLargestAccounts(params) {
      requireParams(params, 1);
      const mint = pubkeyParam(params[0], "mint");
      const slot = chain.slot(bareCommitment(params[1]));
      const mintAccount = chain.account(mint);
      if (mintAccount === undefined) throw invalidParam("could not find account");
      if (TOKEN_PROGRAMS[mintAccount.programAddress] === undefined) throw invalidParam("not a Token mint");
      const state = readMint(mintAccount);
      if (state === undefined) throw invalidParam("mint could not be unpacked");
      const holders: { address: string; amount: bigint }[] = [];
      const candidates =
        tokenIndex?.accounts(mintAccount.programAddress, "mint", mint) ??
        chain.programAccounts(mintAccount.programAddress);
      for (const { address, account } of candidates) {
        const token = readTokenAccount(account);
        if (token !== undefined && token.mint === mint) holders.push({ address, amount: token.amount });
      }
      holders.sort((a, b) => (a.amount === b.amount ? 0 : a.amount > b.amount ? -1 : 1));
      return withContext(
        slot,
        holders.slice(0, NUM_LARGEST_ACCOUNTS).map(({ address, amount }) => ({
          address,
          ...uiTokenAmount(amount, state.decimals),
        })),
      );
    },

    getTokenAccountsByDelegate: tokenAccountsBy(chain, "delegate", delegateOf, tokenIndex),
  };
}

/** getProgramAccounts' filters, checked as Agave's verify_filter checks them. */
function filtersOf(value: unknown): AccountFilter[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw invalidType(value, "a sequence");
  if (value.length > MAX_FILTERS) throw paramError(`Too many filters provided; max ${MAX_FILTERS}`);
  return value.map(filterOf);
}

function filterOf(value: unknown): AccountFilter {
  // tokenAccountState is a unit variant: serde takes it as the bare string too.
  if (value === "tokenAccountState") return tokenAccountState;
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw invalidType(value, "enum RpcFilterType");
  }
  const keys = Object.keys(value);
  const variant = keys[0];
  if (keys.length !== 1 || variant === undefined) throw invalidParams("expected map with a single key");
  const body = (value as Record<string, unknown>)[variant];
  switch (variant) {
    case "dataSize": {
      const size = u64Param(body);
      return Object.assign((account: RawAccount) => BigInt(account.data.length) === size, { dataSize: size });
    }
    case "memcmp":
      return memcmpFilter(body);
    case "tokenAccountState":
      return tokenAccountState;
    default:
      throw invalidParams(
        `unknown variant \`${variant}\`, expected one of \`dataSize\`, \`memcmp\`, \`tokenAccountState\``,
      );
  }
}

const tokenAccountState: AccountFilter = Object.assign(
  (account: RawAccount) => readTokenAccount(account) !== undefined,
  { tokenAccountState: true as const },
);

function memcmpFilter(value: unknown): AccountFilter {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw invalidType(value, "struct Memcmp");
  }
  const { offset, bytes, encoding } = value as Record<string, unknown>;
  if (offset === undefined) throw invalidParams("missing field `offset`");
  if (bytes === undefined) throw invalidParams("missing field `bytes`");
  const at = usizeParam(offset);
  if (typeof bytes !== "string") throw invalidType(bytes, "a string");
  let wanted: Uint8Array;
  if (encoding === undefined || encoding === null || encoding === "base58") {
    if (bytes.length > MAX_DATA_BASE58_SIZE) throw invalidParam("DataTooLarge");
    const bad = [...bytes].findIndex((c) => !/[1-9A-HJ-NP-Za-km-z]/.test(c));
    if (bad >= 0) {
      throw invalidParam(`Base58DecodeError(InvalidCharacter { character: '${bytes[bad]}', index: ${bad} })`);
    }
    wanted = getBase58Encoder().encode(bytes) as Uint8Array;
  } else if (encoding === "base64") {
    if (bytes.length > MAX_DATA_BASE64_SIZE) throw invalidParam("DataTooLarge");
    if (!/^[A-Za-z0-9+/]*={0,2}$/.test(bytes) || bytes.length % 4 !== 0) {
      throw invalidParam("Base64DecodeError(InvalidPadding)");
    }
    wanted = Buffer.from(bytes, "base64");
  } else if (typeof encoding === "string") {
    throw invalidParams(`unknown variant \`${encoding}\`, expected \`base58\` or \`base64\``);
  } else {
    throw invalidType(encoding, "a memcmp encoding");
  }
  if (wanted.length > MAX_DATA_SIZE) throw invalidParam("DataTooLarge");
  const expected = wanted;
  return Object.assign(
    (account: RawAccount) => {
      const data = account.data;
      if (at + expected.length > data.length) return false;
      for (let i = 0; i < expected.length; i++) if (data[at + i] !== expected[i]) return false;
      return true;
    },
    { memcmp: { offset: at, bytes: expected } },
  );
}

import { accountJson, dataSliceOf, encodingOf } from "../../encoding/account-encoding.ts";
import type { Commitment } from "../../runtime/block-clock.ts";
import type { LocalChain } from "../../runtime/local-chain.ts";
import type { TokenAccountIndex } from "../../runtime/token-account-index.ts";
import { readMint, readTokenAccount, TOKEN_PROGRAMS, uiTokenAmount } from "../../runtime/token-accounts.ts";
import { invalidParam, invalidParams, JsonRpcError } from "../json-rpc-error.ts";
import type { RpcMethod } from "../json-rpc-handler.ts";
import {
  commitmentOf,
  configParam,
  contextSlotOf,
  invalidType,
  listParam,
  pubkeyParam,
  requireParams,
  usizeParam,
  withContext,
} from "../rpc-params.ts";
import { tokenAccountsBy } from "./token-accounts-by.ts";

/** Solana's largest account (MAX_PERMITTED_DATA_LENGTH, 10 MiB). */
const MAX_PERMITTED_DATA_LENGTH = 10 * 1024 * 1024;

/**
 * A bare CommitmentConfig param (getTokenAccountBalance, getTokenSupply,
 * getMinimumBalanceForRentExemption): its `commitment` is required when the object is given, and
 * minContextSlot does not apply.
 */
export function bareCommitment(value: unknown): Commitment {
  if (value === undefined || value === null) return "finalized";
  if (typeof value !== "object" || Array.isArray(value)) throw invalidType(value, "struct CommitmentConfig");
  if ((value as Record<string, unknown>).commitment === undefined)
    throw invalidParams("missing field `commitment`");
  return commitmentOf(value as Record<string, unknown>);
}

/** getMultipleAccounts' limit, as Agave's (MAX_MULTIPLE_ACCOUNTS). */
const MAX_MULTIPLE_ACCOUNTS = 100;

/** The account reads: balances, accounts in every encoding, token balances and supplies, rent. */
export function accountMethods(chain: LocalChain, tokenIndex?: TokenAccountIndex): Record<string, RpcMethod> {
  /** The commitment's slot, checked against minContextSlot. */
  const contextSlot = (config: Record<string, unknown>) => contextSlotOf(chain, config);
  const read = (address: string) => chain.account(address);

  return {
    getBalance(params) {
      requireParams(params, 1);
      const address = pubkeyParam(params[0], "pubkey");
      const slot = contextSlot(configParam(params, 1));
      return withContext(slot, chain.account(address)?.lamports ?? 0n);
    },

    getAccountInfo(params, answer) {
      requireParams(params, 1);
      const address = pubkeyParam(params[0], "pubkey");
      const config = configParam(params, 1);
      const encoding = encodingOf(config, "binary");
      const slice = dataSliceOf(config);
      const slot = contextSlot(config);
      const account = chain.account(address);
      return withContext(
        slot,
        account === undefined ? null : accountJson(account, encoding, slice, read, answer, address),
      );
    },

    getMultipleAccounts(params, answer) {
      requireParams(params, 1);
      const addresses = listParam(params[0], MAX_MULTIPLE_ACCOUNTS, (item, i) =>
        pubkeyParam(item, `pubkeys[${i}]`),
      );
      const config = configParam(params, 1);
      const encoding = encodingOf(config, "base64");
      const slice = dataSliceOf(config);
      const slot = contextSlot(config);
      return withContext(
        slot,
        addresses.map((address) => {
          const account = chain.account(address);
          return account === undefined ? null : accountJson(account, encoding, slice, read, answer, address);
        }),
      );
    },

    getTokenAccountBalance(params) {
      requireParams(params, 1);
      const address = pubkeyParam(params[0], "pubkey");
      const slot = chain.slot(bareCommitment(params[1]));
      const account = chain.account(address);
      if (account === undefined) throw invalidParam("could not find account");
      const token = readTokenAccount(account);
      if (token === undefined) throw invalidParam("not a Token account");
      const mintAccount = chain.account(token.mint);
      if (mintAccount === undefined) throw invalidParam("could not find mint");
      const mint = readMint(mintAccount);
      if (mint === undefined) throw invalidParam("Token mint could not be unpacked");
      return withContext(slot, uiTokenAmount(token.amount, mint.decimals));
    },

    getTokenSupply(params) {
      requireParams(params, 1);
      const address = pubkeyParam(params[0], "mint");
      const slot = chain.slot(bareCommitment(params[1]));
      const account = chain.account(address);
      if (account === undefined) throw invalidParam("could not find account");
      if (TOKEN_PROGRAMS[account.programAddress] === undefined) throw invalidParam("not a Token mint");
      const mint = readMint(account);
      if (mint === undefined) throw invalidParam("mint could not be unpacked");
      return withContext(slot, uiTokenAmount(mint.supply, mint.decimals));
    },

    getTokenAccountsByOwner: tokenAccountsBy(chain, "owner", (token) => token.owner, tokenIndex),

    getMinimumBalanceForRentExemption(params) {
      requireParams(params, 1);
      const size = usizeParam(params[0]);
      bareCommitment(params[1]);
      if (size > MAX_PERMITTED_DATA_LENGTH) throw new JsonRpcError(-32600, "Invalid request");
      return chain.rentExemption(size);
    },
  };
}

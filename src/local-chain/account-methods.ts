import { TOKEN_PROGRAM_ADDRESS } from "@solana-program/token";
import { TOKEN_2022_PROGRAM_ADDRESS } from "@solana-program/token-2022";
import { accountJson, dataSliceOf, encodingOf } from "./account-encoding.ts";
import { invalidParam, invalidParams } from "./json-rpc-error.ts";
import type { RpcMethod } from "./json-rpc-handler.ts";
import type { LocalChain } from "./local-chain.ts";
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
} from "./rpc-params.ts";
import { readMint, readTokenAccount, uiTokenAmount } from "./token-accounts.ts";

/** getMultipleAccounts' limit, as Agave's (MAX_MULTIPLE_ACCOUNTS). */
const MAX_MULTIPLE_ACCOUNTS = 100;

/** The account reads: balances, accounts in every encoding, token balances and supplies, rent. */
export function accountMethods(chain: LocalChain): Record<string, RpcMethod> {
  /** The commitment's slot, checked against minContextSlot. */
  const contextSlot = (config: Record<string, unknown>) => contextSlotOf(chain, config);
  const read = (address: string) => chain.account(address);

  return {
    getBalance(params) {
      requireParams(params, 1);
      const address = pubkeyParam(params[0]);
      const slot = contextSlot(configParam(params, 1));
      return withContext(slot, chain.account(address)?.lamports ?? 0n);
    },

    getAccountInfo(params) {
      requireParams(params, 1);
      const address = pubkeyParam(params[0]);
      const config = configParam(params, 1);
      const encoding = encodingOf(config, "binary");
      const slice = dataSliceOf(config);
      const slot = contextSlot(config);
      const account = chain.account(address);
      return withContext(slot, account === undefined ? null : accountJson(account, encoding, slice, read));
    },

    getMultipleAccounts(params) {
      requireParams(params, 1);
      const addresses = listParam(params[0], MAX_MULTIPLE_ACCOUNTS, pubkeyParam);
      const config = configParam(params, 1);
      const encoding = encodingOf(config, "base64");
      const slice = dataSliceOf(config);
      const slot = contextSlot(config);
      return withContext(
        slot,
        addresses.map((address) => {
          const account = chain.account(address);
          return account === undefined ? null : accountJson(account, encoding, slice, read);
        }),
      );
    },

    getTokenAccountBalance(params) {
      requireParams(params, 1);
      const address = pubkeyParam(params[0]);
      const slot = contextSlot(configParam(params, 1));
      const account = chain.account(address);
      if (account === undefined) throw invalidParam("could not find account");
      const token = readTokenAccount(account);
      if (token === undefined) throw invalidParam("not a Token account");
      const mint = readMint(chain.account(token.mint));
      if (mint === undefined) throw invalidParam("could not find mint");
      return withContext(slot, uiTokenAmount(token.amount, mint.decimals));
    },

    getTokenSupply(params) {
      requireParams(params, 1);
      const address = pubkeyParam(params[0]);
      const slot = contextSlot(configParam(params, 1));
      const account = chain.account(address);
      if (account === undefined) throw invalidParam("could not find mint");
      const mint = readMint(account);
      if (mint === undefined) throw invalidParam("not a Token mint");
      return withContext(slot, uiTokenAmount(mint.supply, mint.decimals));
    },

    getTokenAccountsByOwner(params) {
      requireParams(params, 2);
      const owner = pubkeyParam(params[0]);
      const filter = params[1];
      if (typeof filter !== "object" || filter === null || Array.isArray(filter)) {
        throw invalidType(filter, "a mint or programId filter");
      }
      const { mint, programId } = filter as Record<string, unknown>;
      if ((mint === undefined) === (programId === undefined)) {
        throw invalidParams("expected a map with a single key, `mint` or `programId`");
      }
      let programs: string[];
      let wantedMint: string | undefined;
      if (mint !== undefined) {
        wantedMint = pubkeyParam(mint);
        const mintAccount = chain.account(wantedMint);
        if (mintAccount === undefined || readMint(mintAccount) === undefined)
          throw invalidParam("could not find mint");
        programs = [mintAccount.programAddress];
      } else {
        const program = pubkeyParam(programId);
        if (program !== TOKEN_PROGRAM_ADDRESS && program !== TOKEN_2022_PROGRAM_ADDRESS) {
          throw invalidParam("unrecognized Token program id");
        }
        programs = [program];
      }
      const config = configParam(params, 2);
      const encoding = encodingOf(config, "binary");
      const slice = dataSliceOf(config);
      const slot = contextSlot(config);
      const found = programs.flatMap((program) =>
        chain.programAccounts(program).filter(({ account }) => {
          const token = readTokenAccount(account);
          return (
            token !== undefined &&
            token.owner === owner &&
            (wantedMint === undefined || token.mint === wantedMint)
          );
        }),
      );
      return withContext(
        slot,
        found.map(({ address, account }) => ({
          pubkey: address,
          account: accountJson(account, encoding, slice, read),
        })),
      );
    },

    getMinimumBalanceForRentExemption(params) {
      requireParams(params, 1);
      const size = usizeParam(params[0]);
      commitmentOf(configParam(params, 1));
      return chain.rentExemption(size);
    },
  };
}

import type { ReadonlyUint8Array } from "@solana/kit";
import { TOKEN_PROGRAM_ADDRESS } from "@solana-program/token";
import { accountJson, dataSliceOf, encodingOf, parsedTokenData } from "../../encoding/account-encoding.ts";
import type { LocalChain } from "../../runtime/local-chain.ts";
import { readOnce, type TokenAccountIndex } from "../../runtime/token-account-index.ts";
import {
  readMint,
  readTokenAccount,
  TOKEN_PROGRAMS,
  type TokenAccountState,
} from "../../runtime/token-accounts.ts";
import { invalidParam, invalidParams } from "../json-rpc-error.ts";
import type { RpcMethod } from "../json-rpc-handler.ts";
import {
  configParam,
  contextSlotOf,
  invalidType,
  pubkeyParam,
  requireParams,
  withContext,
} from "../rpc-params.ts";

const NATIVE_MINT = "So11111111111111111111111111111111111111112";

/** Byte order of two addresses, as Agave sorts the accounts it lists. */
export function compareBytes(a: ReadonlyUint8Array, b: ReadonlyUint8Array): number {
  for (let i = 0; i < a.length && i < b.length; i++) {
    if (a[i] !== b[i]) return (a[i] as number) - (b[i] as number);
  }
  return a.length - b.length;
}

/**
 * Sorts by address bytes, as Agave's sortResults does, without decoding an address: base58's
 * alphabet is in ASCII order, so two addresses compare as their numbers do, by the length of
 * their digits past the leading "1"s (zero bytes) and then as text. Decoding both addresses at
 * each comparison was a third of a 3,000-account scan.
 */
export function sortByAddress<T extends { address: string }>(found: T[]): void {
  found.sort((a, b) => compareAddresses(a.address, b.address));
}

/** The byte order of two base58 addresses (compareBytes of their bytes), read from their text. */
export function compareAddresses(a: string, b: string): number {
  let i = 0;
  let j = 0;
  while (i < a.length && a[i] === "1") i++;
  while (j < b.length && b[j] === "1") j++;
  const digits = a.length - i - (b.length - j);
  if (digits !== 0) return digits;
  for (; i < a.length; i++, j++) {
    if (a[i] !== b[j]) return (a[i] as string) < (b[j] as string) ? -1 : 1;
  }
  return 0;
}

/**
 * getTokenAccountsByOwner and getTokenAccountsByDelegate: the token accounts whose `role` (as
 * `pick` reads it from the account) is the first param, among a mint's or a token program's,
 * with Agave's filter rules and refusals. `role` names the param in refusals.
 */
export function tokenAccountsBy(
  chain: LocalChain,
  role: "owner" | "delegate",
  pick: (token: TokenAccountState) => string | undefined,
  tokenIndex?: TokenAccountIndex,
): RpcMethod {
  return (params, answer) => {
    requireParams(params, 2);
    const wanted = pubkeyParam(params[0], role);
    const filter = params[1];
    if (typeof filter !== "object" || filter === null || Array.isArray(filter)) {
      throw invalidType(filter, "enum RpcTokenAccountsFilter");
    }
    const keys = Object.keys(filter);
    if (keys.length !== 1 || (keys[0] !== "mint" && keys[0] !== "programId")) {
      throw invalidParams(
        keys.length === 1
          ? `unknown variant \`${keys[0]}\`, expected \`mint\` or \`programId\``
          : "expected map with a single key",
      );
    }
    const { mint, programId } = filter as Record<string, unknown>;
    let program: string;
    let wantedMint: string | undefined;
    if (mint !== undefined) {
      wantedMint = pubkeyParam(mint, "mint");
      if (wantedMint === NATIVE_MINT) {
        program = TOKEN_PROGRAM_ADDRESS;
      } else {
        const mintAccount = chain.account(wantedMint);
        if (mintAccount === undefined) throw invalidParam("could not find mint");
        if (TOKEN_PROGRAMS[mintAccount.programAddress] === undefined) throw invalidParam("not a Token mint");
        if (readMint(mintAccount) === undefined) throw invalidParam("Token mint could not be unpacked");
        program = mintAccount.programAddress;
      }
    } else {
      program = pubkeyParam(programId, "programId");
      if (TOKEN_PROGRAMS[program] === undefined) throw invalidParam("unrecognized Token program id");
    }
    const config = configParam(params, 2);
    const encoding = encodingOf(config, "binary");
    const slice = dataSliceOf(config);
    const slot = contextSlotOf(chain, config);
    // The index holds the accounts of the owner (or delegate): those are all this can answer with.
    const found = (tokenIndex?.accounts(program, role, wanted) ?? chain.programAccounts(program)).filter(
      ({ account }) => {
        const token = readTokenAccount(account);
        return (
          token !== undefined &&
          pick(token) === wanted &&
          (wantedMint === undefined || token.mint === wantedMint)
        );
      },
    );
    sortByAddress(found);
    const read = readOnce(chain.account);
    const accounts: { pubkey: string; account: Record<string, unknown> }[] = [];
    for (const { address, account } of found) {
      // jsonParsed drops what it cannot parse (a token account whose mint is gone), as Agave does.
      if (encoding === "jsonParsed" && parsedTokenData(account, read) === undefined) continue;
      accounts.push({ pubkey: address, account: accountJson(account, encoding, slice, read, answer) });
    }
    return withContext(slot, accounts);
  };
}

/** A token account's delegate, when it has one. */
export function delegateOf(token: TokenAccountState): string | undefined {
  return token.delegate.__option === "Some" ? token.delegate.value : undefined;
}

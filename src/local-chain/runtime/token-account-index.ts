import type { Address } from "@solana/kit";
import type { ChainEvents } from "./chain-events.ts";
import type { LocalChain } from "./local-chain.ts";
import { type RawAccount, readTokenAccount, TOKEN_PROGRAMS } from "./token-accounts.ts";

/** What a token account is looked up by. */
export type TokenAccountField = "mint" | "owner" | "delegate";

/**
 * The chain's token accounts by mint, by owner and by delegate, kept on every write: the token
 * methods (getTokenAccountsByOwner, …ByDelegate, getTokenLargestAccounts, and getProgramAccounts
 * with a mint or owner memcmp) read only the accounts they answer with, not every token account
 * of the chain (3,000 USDC accounts made a scan 2 s long).
 */
export interface TokenAccountIndex {
  /**
   * `program`'s token accounts whose `field` is `key`, read now. What a caller answers with must
   * still pass its own checks: the index says where to look, the account read says what is there.
   */
  accounts(
    program: string,
    field: TokenAccountField,
    key: string,
  ): { address: Address; account: RawAccount }[];
  /** Stops following the chain's writes. */
  close(): void;
}

interface Entry {
  /** The account as its last write left it: a query reads it here, not from LiteSVM again. */
  readonly account: RawAccount;
  readonly program: string;
  readonly mint: string;
  readonly owner: string;
  readonly delegate: string | undefined;
}

/**
 * Indexes every token account of both token programs once (the genesis or the saved state), then
 * follows the chain's events: each transaction's writable accounts and each account a cheatcode
 * set are read again and moved in the index. A write costs one account read per written address;
 * the index holds each token account as read (about 1 KB with its decoded state), so a query
 * neither reads LiteSVM nor decodes an account the index already decoded.
 */
export function createTokenAccountIndex(options: {
  readonly chain: LocalChain;
  readonly events: ChainEvents;
}): TokenAccountIndex {
  const { chain } = options;
  const entries = new Map<string, Entry>();
  const by: Record<TokenAccountField, Map<string, Set<string>>> = {
    mint: new Map(),
    owner: new Map(),
    delegate: new Map(),
  };
  const keyOf = (program: string, value: string) => `${program}:${value}`;
  const link = (field: TokenAccountField, key: string, address: string) => {
    let set = by[field].get(key);
    if (set === undefined) {
      set = new Set();
      by[field].set(key, set);
    }
    set.add(address);
  };
  const unlink = (field: TokenAccountField, key: string, address: string) => {
    const set = by[field].get(key);
    set?.delete(address);
    if (set?.size === 0) by[field].delete(key);
  };

  const put = (address: string, account: RawAccount | undefined) => {
    const old = entries.get(address);
    const token = account === undefined ? undefined : readTokenAccount(account);
    const entry: Entry | undefined =
      token === undefined || account === undefined
        ? undefined
        : {
            account,
            program: account.programAddress,
            mint: token.mint,
            owner: token.owner,
            delegate: token.delegate.__option === "Some" ? token.delegate.value : undefined,
          };
    if (
      old !== undefined &&
      entry !== undefined &&
      old.program === entry.program &&
      old.mint === entry.mint &&
      old.owner === entry.owner &&
      old.delegate === entry.delegate
    ) {
      entries.set(address, entry);
      return;
    }
    if (old !== undefined) {
      entries.delete(address);
      unlink("mint", keyOf(old.program, old.mint), address);
      unlink("owner", keyOf(old.program, old.owner), address);
      if (old.delegate !== undefined) unlink("delegate", keyOf(old.program, old.delegate), address);
    }
    if (entry !== undefined) {
      entries.set(address, entry);
      link("mint", keyOf(entry.program, entry.mint), address);
      link("owner", keyOf(entry.program, entry.owner), address);
      if (entry.delegate !== undefined) link("delegate", keyOf(entry.program, entry.delegate), address);
    }
  };

  for (const program of Object.keys(TOKEN_PROGRAMS)) {
    for (const { address, account } of chain.programAccounts(program)) put(address, account);
  }
  const unlisten = options.events.listen((event) => {
    if (event.kind === "transaction") {
      for (const address of event.written) put(address, chain.account(address));
    } else if (event.kind === "account") {
      put(event.address, chain.account(event.address));
    }
  });

  return {
    accounts(program, field, key) {
      const found: { address: Address; account: RawAccount }[] = [];
      for (const address of by[field].get(keyOf(program, key)) ?? []) {
        const entry = entries.get(address);
        if (entry !== undefined) found.push({ address: address as Address, account: entry.account });
      }
      return found;
    },
    close: unlisten,
  };
}

/**
 * A reader that reads each address once per request: jsonParsed token accounts all read their
 * mint (its decimals), and 3,000 accounts of one mint then read it once instead of 3,000 times.
 */
export function readOnce(
  read: (address: string) => RawAccount | undefined,
): (address: string) => RawAccount | undefined {
  const seen = new Map<string, RawAccount | undefined>();
  return (address) => {
    if (seen.has(address)) return seen.get(address);
    const account = read(address);
    seen.set(address, account);
    return account;
  };
}

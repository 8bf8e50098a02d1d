import { base58Address } from "./base58-address.ts";
import type { RawAccountState } from "./chain.ts";
import type { SwapRefusal } from "./swap-refusals.ts";
import type { PlainInstruction } from "./swap-transaction.ts";

/**
 * What a route from a Swap API may do, checked before anything is signed.
 *
 * A route is a third party's answer. The transaction that carries it is signed by the fee payer
 * (the executor), by the owner's delegate (for the service's own transfer of `amount` to the run's
 * taker) and by the taker. On Solana a signature serves every instruction of the transaction that
 * names the key, whatever the instruction's own signer flag says, so a route may never name the
 * executor or the delegate at all; only the taker, which holds nothing but this run's input, may
 * sign its instructions.
 */

export const SYSTEM_PROGRAM = "11111111111111111111111111111111";
export const ASSOCIATED_TOKEN_PROGRAM = "ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL";
export const LOOKUP_TABLE_PROGRAM = "AddressLookupTab1e1111111111111111111111111";
const COMPUTE_BUDGET_PROGRAM = "ComputeBudget111111111111111111111111111111";
export const TOKEN_PROGRAMS: ReadonlySet<string> = new Set([
  "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA",
  "TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb",
]);

/** SPL Token (and Token-2022) instructions a route may call: moving tokens and syncing wSOL. */
const TOKEN_MOVES = new Set([3, 12, 17]);
const CLOSE_ACCOUNT = 9;
/** Names of the token instructions a refusal names (Token-2022 shares SPL Token's numbering). */
const TOKEN_INSTRUCTION_NAMES: Record<number, string> = {
  0: "InitializeMint",
  1: "InitializeAccount",
  4: "Approve",
  5: "Revoke",
  6: "SetAuthority",
  7: "MintTo",
  8: "Burn",
  10: "FreezeAccount",
  11: "ThawAccount",
  13: "ApproveChecked",
  14: "MintToChecked",
  15: "BurnChecked",
  16: "InitializeAccount2",
  18: "InitializeAccount3",
};
/** The associated token program's CreateIdempotent: dropped from routes (see vetRoute). */
const CREATE_IDEMPOTENT = 1;

export interface RouteKeys {
  /** The fee payer. */
  readonly executor: string;
  /** The owner's delegate for (owner, wallet). */
  readonly delegate: string;
  /** The owner's wallet. */
  readonly wallet: string;
  /** This run's taker, and its input account (the only account a route may close). */
  readonly taker: string;
  readonly takerInput: string;
}

export type RouteVerdict =
  | { readonly ok: true; readonly instructions: readonly PlainInstruction[] }
  | { readonly ok: false; readonly reason: SwapRefusal; readonly text: string };

/**
 * The route's instructions as the transaction will carry them, or why they may not be signed.
 * Dropped: the route's idempotent associated account creations (the service creates the taker's
 * account itself, the owner's output account must exist already, and a creation paid by the
 * executor for anyone else is the executor's rent given away), and a close of the taker's input account with its rent to the executor (the
 * service's own last instruction does exactly that).
 * Refused, any instruction that:
 * - calls a program off SWAP_ALLOWED_PROGRAMS, the System program (which moves lamports and
 *   reassigns accounts), or the Compute Budget program (the service sets the budget);
 * - names the executor or the delegate, in any role;
 * - needs a signer besides the taker (the owner's wallet above all);
 * - is a token instruction other than a transfer or a wSOL sync (Approve, Revoke, SetAuthority,
 *   their Checked forms, mints, burns, Token-2022's extensions), or a CloseAccount of anything
 *   but the taker's input account, or with its rent anywhere but the executor;
 * - is an associated token instruction other than CreateIdempotent.
 */
export function vetRoute(
  named: readonly (readonly [string, PlainInstruction])[],
  keys: RouteKeys,
  allowed: ReadonlySet<string>,
): RouteVerdict {
  const kept: PlainInstruction[] = [];
  const refuse = (reason: SwapRefusal, text: string): RouteVerdict => ({ ok: false, reason, text });
  for (const [name, ix] of named) {
    const program = ix.programAddress;
    if (program === SYSTEM_PROGRAM) {
      return refuse("system", `${name} calls the System program: the service creates every account it needs`);
    }
    if (program === COMPUTE_BUDGET_PROGRAM) {
      return refuse(
        "program",
        `${name} calls the Compute Budget program: the service sets the budget itself`,
      );
    }
    if (!allowed.has(program)) {
      return refuse("program", `${name} calls ${program}, a program not on SWAP_ALLOWED_PROGRAMS`);
    }
    const at = (i: number) => ix.accounts[i]?.address;
    if (TOKEN_PROGRAMS.has(program)) {
      const kind = ix.data[0] ?? -1;
      if (kind === CLOSE_ACCOUNT) {
        if (at(0) === keys.takerInput && at(1) === keys.executor && at(2) === keys.taker) continue;
        return refuse(
          "close",
          `${name} closes ${at(0)} with its rent to ${at(1)}: a route may close only the taker's own account, its rent back to the executor`,
        );
      }
      if (!TOKEN_MOVES.has(kind)) {
        const what = TOKEN_INSTRUCTION_NAMES[kind] ?? `instruction ${kind}`;
        return refuse("authority", `${name} is a token ${what}, which no swap needs`);
      }
    }
    if (program === ASSOCIATED_TOKEN_PROGRAM) {
      const kind = ix.data.length === 0 ? 0 : ix.data[0];
      if (kind === CREATE_IDEMPOTENT && ix.data.length <= 1) continue;
      return refuse(
        "account_op",
        `${name} is an associated token account operation other than an idempotent creation`,
      );
    }
    for (const account of ix.accounts) {
      if (account.address === keys.executor) {
        return refuse("authority", `${name} names the executor ${keys.executor}, which a route never may`);
      }
      if (account.address === keys.delegate) {
        return refuse(
          "authority",
          `${name} names the owner's delegate ${keys.delegate}, which a route never may`,
        );
      }
      if (!account.signer) continue;
      if (account.address === keys.wallet) {
        return refuse("signer", `${name} asks the owner's wallet ${keys.wallet} to sign`);
      }
      if (account.address !== keys.taker) {
        return refuse("signer", `${name} asks ${account.address} to sign, which is not the run's taker`);
      }
    }
    kept.push(ix);
  }
  return { ok: true, instructions: kept };
}

/** A token account's fields as stored (SPL Token's first 165 bytes; Token-2022 shares them). */
export interface TokenFields {
  readonly mint: string;
  readonly owner: string;
  readonly amount: bigint;
  readonly delegate: string | undefined;
  readonly state: number;
  readonly delegatedAmount: bigint;
  readonly closeAuthority: string | undefined;
}

const TOKEN_ACCOUNT_SIZE = 165;

/** The token account in `account`, or undefined when it holds none. */
export function tokenFieldsOf(account: RawAccountState | undefined): TokenFields | undefined {
  if (account === undefined || !TOKEN_PROGRAMS.has(account.program)) return undefined;
  const data = account.data;
  if (data.length < TOKEN_ACCOUNT_SIZE) return undefined;
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  const key = (offset: number) => base58Address(data.subarray(offset, offset + 32));
  const option = (tag: number, offset: number) => (view.getUint32(tag, true) === 1 ? key(offset) : undefined);
  const state = data[108] ?? 0;
  if (state === 0) return undefined;
  return {
    mint: key(0),
    owner: key(32),
    amount: view.getBigUint64(64, true),
    delegate: option(72, 76),
    state,
    delegatedAmount: view.getBigUint64(121, true),
    closeAuthority: option(129, 133),
  };
}

/** What the end-state check needs of one run. */
export interface EndStateRules {
  readonly keys: RouteKeys;
  readonly ownerInput: string;
  readonly ownerOutput: string;
  readonly amount: bigint;
  readonly minimumOut: bigint;
  readonly outputMint: string;
  /** The most lamports the executor may spend: the fee cap and the signatures' fee. */
  readonly executorSpendBound: bigint;
}

/**
 * Why the simulated end state is not exactly this run's swap, or undefined when it is. `addresses`
 * are every writable account of the transaction; `before` their state read just before, `after`
 * the simulation's. Every one that the executor, the delegate or the owner's wallet owns, is
 * delegate of or is close authority of must end as it began, except:
 * - the owner's input account: exactly `amount` less (and as much less allowance);
 * - the owner's output account: at least `minimumOut` more, still the owner's, of the output mint;
 * - the executor's own account: at most `executorSpendBound` fewer lamports, its owner program and
 *   data unchanged.
 * The taker's input account must end closed. What a pool lets the taker do with the pool's own
 * vaults is the pool's affair.
 */
export function endStateProblem(
  addresses: readonly string[],
  before: readonly (RawAccountState | undefined)[],
  after: readonly (RawAccountState | undefined)[],
  rules: EndStateRules,
): string | undefined {
  const { keys } = rules;
  const ours = new Set([keys.executor, keys.delegate, keys.wallet]);
  const held = (t: TokenFields | undefined) =>
    t !== undefined &&
    (ours.has(t.owner) ||
      (t.delegate !== undefined && ours.has(t.delegate)) ||
      (t.closeAuthority !== undefined && ours.has(t.closeAuthority)));
  for (const [i, address] of addresses.entries()) {
    const was = before[i];
    const is = after[i];
    if (address === keys.takerInput) {
      if (is !== undefined && is.lamports > 0n) return "leaves the taker's input account open";
      continue;
    }
    if (ours.has(address)) {
      // A key's own system account: only the executor pays, and only the bounded fee and rent.
      if (is === undefined) return `closes ${nameOf(address, keys)}'s own account`;
      if (was !== undefined && (is.program !== was.program || !sameBytes(is.data, was.data))) {
        return `changes the owner program or data of ${nameOf(address, keys)}'s own account`;
      }
      const spent = (was?.lamports ?? 0n) - is.lamports;
      const bound = address === keys.executor ? rules.executorSpendBound : 0n;
      if (spent > bound) {
        return `takes ${spent} lamports from ${nameOf(address, keys)}, more than the ${bound} it may spend`;
      }
      continue;
    }
    const tokenWas = tokenFieldsOf(was);
    const tokenIs = tokenFieldsOf(is);
    if (address === rules.ownerInput) {
      if (tokenWas === undefined) return "finds no owner's input account";
      if (tokenIs === undefined) return "leaves the owner's input account closed";
      const spent = tokenWas.amount - tokenIs.amount;
      if (spent !== rules.amount) {
        return `takes ${spent} base units from the owner's input account, not exactly ${rules.amount}`;
      }
      const allowanceSpent = tokenWas.delegatedAmount - tokenIs.delegatedAmount;
      // SPL Token clears the delegate when a transfer spends its whole allowance: a run that
      // spends the last of it leaves the account with no delegate, which is no change of authority.
      const allowanceEnded =
        tokenWas.delegate !== undefined &&
        tokenIs.delegate === undefined &&
        tokenIs.delegatedAmount === 0n &&
        allowanceSpent === rules.amount;
      const authoritiesKept = allowanceEnded
        ? sameAuthorities({ ...tokenWas, delegate: undefined }, tokenIs)
        : sameAuthorities(tokenWas, tokenIs);
      if (
        !authoritiesKept ||
        tokenWas.mint !== tokenIs.mint ||
        (allowanceSpent !== rules.amount && allowanceSpent !== 0n)
      ) {
        return "changes the owner's input account beyond its balance and allowance";
      }
      continue;
    }
    if (address === rules.ownerOutput) {
      if (tokenIs === undefined) return "leaves the owner without an output account";
      if (tokenIs.owner !== keys.wallet || tokenIs.mint !== rules.outputMint) {
        return "sends the output to an account that is not the owner's";
      }
      if (tokenWas !== undefined && !sameAuthorities(tokenWas, tokenIs)) {
        return "changes the authorities of the owner's output account";
      }
      const gained = tokenIs.amount - (tokenWas?.amount ?? 0n);
      if (gained < rules.minimumOut) {
        return `adds ${gained} base units to the owner's output account, less than the quote's minimum of ${rules.minimumOut}`;
      }
      continue;
    }
    if (!held(tokenWas) && !held(tokenIs)) continue;
    if (
      tokenWas === undefined ||
      tokenIs === undefined ||
      tokenWas.amount !== tokenIs.amount ||
      tokenWas.delegatedAmount !== tokenIs.delegatedAmount ||
      tokenWas.mint !== tokenIs.mint ||
      !sameAuthorities(tokenWas, tokenIs) ||
      (was?.lamports ?? 0n) !== (is?.lamports ?? 0n)
    ) {
      return `changes ${address}, a token account the service's keys or the owner's wallet hold authority over`;
    }
  }
  return undefined;
}

function sameAuthorities(a: TokenFields, b: TokenFields): boolean {
  return (
    a.owner === b.owner &&
    a.delegate === b.delegate &&
    a.closeAuthority === b.closeAuthority &&
    a.state === b.state
  );
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((byte, i) => byte === b[i]);
}

function nameOf(address: string, keys: RouteKeys): string {
  if (address === keys.executor) return "the executor";
  if (address === keys.delegate) return "the owner's delegate";
  return "the owner's wallet";
}

/**
 * Each lookup table's addresses as the chain holds them, or why the route's tables cannot be used:
 * one that is not on chain, or not an address lookup table, refuses the route. The chain's own
 * contents are what a transaction loads, so they, not the route's word, are what is compressed
 * against and checked.
 */
export function lookupTablesOnChain(
  tables: readonly string[],
  accounts: readonly (RawAccountState | undefined)[],
): { ok: true; tables: Record<string, readonly string[]> } | { ok: false; text: string } {
  const out: Record<string, string[]> = {};
  for (const [i, table] of tables.entries()) {
    const account = accounts[i];
    if (account === undefined) return { ok: false, text: `its lookup table ${table} is not on chain` };
    if (account.program !== LOOKUP_TABLE_PROGRAM || account.data.length < LOOKUP_TABLE_META_SIZE) {
      return { ok: false, text: `its lookup table ${table} is not an address lookup table` };
    }
    const entries: string[] = [];
    for (let at = LOOKUP_TABLE_META_SIZE; at + 32 <= account.data.length; at += 32) {
      entries.push(base58Address(account.data.subarray(at, at + 32)));
    }
    out[table] = entries;
  }
  return { ok: true, tables: out };
}

/** An address lookup table's header (LookupTableMeta) before its addresses. */
const LOOKUP_TABLE_META_SIZE = 56;

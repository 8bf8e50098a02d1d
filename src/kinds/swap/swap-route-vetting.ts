/**
 * A swap route vetted before anything is built of it: its instructions (swap-route.ts: only
 * programs on SWAP_ALLOWED_PROGRAMS, neither the System nor the Compute Budget program, neither the
 * executor nor the delegate named, no signer but the taker, no authority handed away, nothing
 * closed but the taker's account), its lookup tables as the chain holds them, and the owner's
 * accounts the run spends from and pays into, read with them.
 */
import type { RawAccountState, TokenAccountState } from "../../chain/chain.ts";
import type { TokenFields } from "../../chain/swap-route.ts";
import type { PlainInstruction, SwapAccounts } from "../../chain/swap-transaction.ts";
import type { SwapBuild } from "../../token/jupiter-swap-api.ts";
import { noOutputAccount } from "./swap-result.ts";
import {
  ends,
  final,
  getAccountsBatched,
  ownerInputProblem,
  type RunEnds,
  type SwapRun,
} from "./swap-run.ts";

/** Lookup tables a route may name. */
const MAX_LOOKUP_TABLES = 8;

/**
 * The route's instructions as vetted (swap-route.ts's vetRoute), or its refusal; a route that
 * names more than MAX_LOOKUP_TABLES lookup tables is refused too.
 */
export function vettedRoute(run: SwapRun, route: SwapBuild): readonly PlainInstruction[] | RunEnds {
  const { builders, keys, allowed, refusals } = run;
  const vetted = builders.vetRoute(namedInstructions(route), keys, allowed);
  if (!vetted.ok) {
    return ends(refusals.retry(vetted.reason, `the swap route was refused before signing: ${vetted.text}`));
  }
  const tableCount = Object.keys(route.lookupTables).length;
  if (tableCount > MAX_LOOKUP_TABLES) {
    return ends(
      refusals.final(
        "lookup_table",
        `the swap route was refused before signing: it names ${tableCount} lookup tables, more than ${MAX_LOOKUP_TABLES}`,
      ),
    );
  }
  return vetted.instructions;
}

/** What the chain held before signing, as far as the run's transaction is concerned. */
export interface ReadBeforeSigning {
  /** The route's lookup tables as the chain holds them: what the transaction will load. */
  readonly tables: Readonly<Record<string, readonly string[]>>;
  /** Every account the transaction may write, as it was (undefined: none there). */
  readonly accounts: Map<string, RawAccountState | undefined>;
}

/**
 * One read of every account the run needs before signing: the route's lookup tables, and every
 * account the transaction may write (the owner's input among them), whose state before is what
 * the simulation's end state is compared with. A table that is not on chain refuses the route;
 * an owner's input account that cannot pay the run fails the slot (no retry mends it), and a
 * missing output account skips it.
 */
export async function readBeforeSigning(
  run: SwapRun,
  route: SwapBuild,
  instructions: readonly PlainInstruction[],
): Promise<ReadBeforeSigning | RunEnds> {
  const { builders, options, refusals, swap } = run;
  const { accounts } = swap;
  // The tables as the chain holds them: what the transaction will load, whatever the route says.
  const tableAddresses = Object.keys(route.lookupTables);
  const writableAsked = writableOf(instructions, run.signers.executor.address, accounts);
  const read = await getAccountsBatched(
    options.transfers,
    [...tableAddresses, ...writableAsked],
    swap.signal,
  );
  const tables = builders.lookupTablesOnChain(tableAddresses, read.slice(0, tableAddresses.length));
  if (!tables.ok) {
    return ends(refusals.final("lookup_table", `the swap route was refused before signing: ${tables.text}`));
  }
  const readBefore = new Map(writableAsked.map((a, i) => [a, read[tableAddresses.length + i]]));

  // The owner's input account: reasons no retry can mend fail the slot now.
  const problem = ownerInputProblem(
    run,
    tokenAccountState(accounts.ownerInput, readBefore.get(accounts.ownerInput), builders.tokenFieldsOf),
  );
  if (problem !== undefined) return ends(final(problem));
  // The owner's output account is the wallet's to create (PrepareApproval's transaction does):
  // the executor never pays rent on the owner's side, which an owner could farm by closing it.
  if (readBefore.get(accounts.ownerOutput) === undefined) return ends(noOutputAccount(swap));
  return { tables: tables.tables, accounts: readBefore };
}

/** The route's instructions, each with the name a refusal gives it. */
function namedInstructions(route: SwapBuild): [string, PlainInstruction][] {
  return [
    ...route.setupInstructions.map((ix, i): [string, PlainInstruction] => [`setup instruction ${i}`, ix]),
    ["the swap instruction", route.swapInstruction],
    ...(route.cleanupInstruction === undefined
      ? []
      : [["the cleanup instruction", route.cleanupInstruction] as [string, PlainInstruction]]),
    ...route.otherInstructions.map((ix, i): [string, PlainInstruction] => [`other instruction ${i}`, ix]),
  ];
}

/**
 * Every account the swap's instructions write, as the transaction compiles them: the fee payer,
 * the service's own (the owner's output, the taker's input, the owner's input), then each the route marks
 * writable. The compiled message is checked against it after the trial build.
 */
function writableOf(route: readonly PlainInstruction[], feePayer: string, accounts: SwapAccounts): string[] {
  const out = new Set<string>([feePayer, accounts.ownerOutput, accounts.takerInput, accounts.ownerInput]);
  for (const ix of route) {
    for (const account of ix.accounts) if (account.writable) out.add(account.address);
  }
  return [...out];
}

/** A token account in the shape the spend check takes, from its stored bytes (undefined: none). */
function tokenAccountState(
  address: string,
  raw: RawAccountState | undefined,
  fieldsOf: (raw: RawAccountState | undefined) => TokenFields | undefined,
): TokenAccountState | undefined {
  const fields = fieldsOf(raw);
  if (fields === undefined) return undefined;
  return {
    address,
    mint: fields.mint,
    owner: fields.owner,
    amount: fields.amount,
    delegate: fields.delegate,
    delegatedAmount: fields.delegatedAmount,
    // SPL Token's AccountState: 1 initialized, 2 frozen.
    frozen: fields.state === 2,
  };
}

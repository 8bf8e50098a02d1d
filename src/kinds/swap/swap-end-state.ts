/**
 * A swap run's trial simulated, and its end state held to exactly the run's swap before anything
 * is signed (swap-route.ts's endStateProblem says what that allows).
 */
import type { RawAccountState, Simulated } from "../../chain/chain.ts";
import type { SwapBuild } from "../../token/jupiter-swap-api.ts";
import { failedOnChain } from "./swap-result.ts";
import type { ReadBeforeSigning } from "./swap-route-vetting.ts";
import { ends, getAccountsBatched, LAMPORTS_PER_SIGNATURE, type RunEnds, type SwapRun } from "./swap-run.ts";
import type { Trial } from "./swap-trial.ts";

/** A simulation whose end state is the run's swap, and the state before it was compared with. */
export interface CheckedEndState {
  /** Every account the transaction may write, and the owner's output account. */
  readonly writable: readonly string[];
  /** Their states before, in the same order. */
  readonly before: readonly (RawAccountState | undefined)[];
  /** The simulation: their states after (`raw`), the units it used, the blockhash it answered. */
  readonly simulation: Simulated;
}

/**
 * The trial simulated with every account it may write named, and each that the executor, the
 * delegate or the owner's wallet owns, is delegate of or is close authority of held to end as it
 * began, except the owner's input (exactly the run's amount less), the owner's output (at least
 * the route's minimum out more) and the executor (at most one bounded fee: the rent of the taker's
 * account comes back when the transaction closes it). A simulation that fails, or that ends
 * otherwise, ends the run before signing.
 */
export async function simulateAndCheckEndState(
  run: SwapRun,
  route: SwapBuild,
  trial: Trial,
  read: ReadBeforeSigning,
): Promise<CheckedEndState | RunEnds> {
  const { builders, options, swap, keys } = run;
  const { transfers } = options;
  const executor = run.signers.executor.address;
  const { accounts, signal } = swap;
  const readBefore = read.accounts;
  // Every account the transaction may write, before and (simulated) after: the chain's own
  // answer. The owner's output account too, whether or not the route writes it: the check
  // holds it to the route's minimum out, and a route that pays elsewhere must fail it.
  const writable = [...new Set([...trial.writable, accounts.ownerOutput])];
  // Read with the route; an account the compiled message writes that the instructions did not
  // name (none known) is read now rather than left out of the check.
  const unread = writable.filter((a) => !readBefore.has(a));
  if (unread.length > 0) {
    const more = await getAccountsBatched(transfers, unread, signal);
    for (const [i, a] of unread.entries()) readBefore.set(a, more[i]);
  }
  const before = writable.map((a) => readBefore.get(a));
  const simulation = await transfers.simulateTransaction(trial.transaction, signal, {
    accounts: writable,
    replaceRecentBlockhash: true,
  });
  if (simulation.err !== null && simulation.err !== undefined) {
    return ends(failedOnChain(simulation.err, executor, "in its simulation"));
  }
  const moved = builders.endStateProblem(
    writable,
    executorAsSimulated(executor, writable, before, simulation),
    simulation.raw,
    {
      keys,
      ownerInput: accounts.ownerInput,
      ownerOutput: accounts.ownerOutput,
      amount: swap.units,
      minimumOut: route.minimumOut,
      outputMint: swap.output.mint,
      // The taker's account's rent comes back in the same transaction: only the fee is spent.
      executorSpendBound: options.maxFeeLamports + LAMPORTS_PER_SIGNATURE * BigInt(trial.signers.length),
    },
  );
  if (moved !== undefined) {
    return ends(
      run.refusals.retry("simulation", `the swap was refused before signing: its simulation ${moved}`),
    );
  }
  return { writable, before, simulation };
}

/**
 * The state before that the end-state check holds the simulation to, with the executor's lamports
 * as they were on the very state the cluster simulated on (its preBalances[0]: the executor is the
 * fee payer, the message's first account). The executor pays every run's fees and rent, so the
 * read made before the simulation is stale by whatever other runs landed in between: compared with
 * it, a run seemed to take their fees too and was refused. The cluster's figure is used only when
 * its after agrees with the simulated account's; otherwise (or with no figure) the read stands.
 */
function executorAsSimulated(
  feePayer: string,
  writable: readonly string[],
  before: readonly (RawAccountState | undefined)[],
  simulation: Simulated,
): readonly (RawAccountState | undefined)[] {
  const lamports = simulation.feePayerLamports;
  const at = writable.indexOf(feePayer);
  const read = before[at];
  if (lamports === undefined || read === undefined || simulation.raw[at]?.lamports !== lamports.after) {
    return before;
  }
  return before.map((state, i) => (i === at ? { ...read, lamports: lamports.before } : state));
}

/**
 * A swap run's trial transaction: built unsigned around the vetted route, with the service's own
 * compute budget, to be simulated and checked before the one sent is signed (swap-send.ts).
 */
import type { PlainInstruction } from "../../chain/swap-transaction.ts";
import type { SwapBuild } from "../../token/jupiter-swap-api.ts";
import type { ReadBeforeSigning } from "./swap-route-vetting.ts";
import { type Builders, clampedUnitPrice, ends, final, type RunEnds, type SwapRun } from "./swap-run.ts";

/** A trial as built (see swapTransaction): its bytes, size, signers, writable accounts, compiled message. */
export type Trial = Awaited<ReturnType<Builders["swapTransaction"]>>;

/** A trial over Solana's size that a route of fewer accounts may bring within it. */
export const FEWER_ACCOUNTS: unique symbol = Symbol("fewer accounts");

/** A trial's lifetime before any simulation answered one: the simulation replaces its blockhash. */
const PLACEHOLDER_LIFETIME = { blockhash: "11111111111111111111111111111111", lastValidBlockHeight: 0n };

/**
 * The run's transaction, unsigned: the compute unit limit at its most, the unit price the route's
 * clamped so that price × limit stays within SWAP_MAX_FEE_LAMPORTS. Over Solana's size, it asks for
 * a route of fewer accounts (FEWER_ACCOUNTS) while there is a smaller `maxAccounts` step to come
 * (`lastStep` false), and fails the slot after the last; a route that needs a signer besides the
 * executor, the delegate and the run's taker is refused.
 */
export async function buildTrial(
  run: SwapRun,
  route: SwapBuild,
  instructions: readonly PlainInstruction[],
  read: ReadBeforeSigning,
  step: { readonly maxAccounts: number | undefined; readonly lastStep: boolean },
): Promise<Trial | RunEnds | typeof FEWER_ACCOUNTS> {
  const { builders, signers, swap, execution } = run;
  const { executor, delegate, taker } = signers;
  // The trial is simulated with the cluster's latest blockhash in place of its own, and the
  // simulation answers it: the signed build's lifetime without a getLatestBlockhash. Until
  // then, any blockhash does (the last one seen, or a placeholder).
  const trial = await builders.swapTransaction({
    feePayer: executor,
    delegate,
    taker,
    owner: swap.config.wallet,
    input: swap.input,
    output: swap.output,
    amount: swap.units,
    accounts: swap.accounts,
    computeUnitLimit: builders.MAX_COMPUTE_UNITS,
    // The route's price, clamped so that price × limit stays within the fee cap.
    computeUnitPrice: clampedUnitPrice(run, route.computeUnitPrice, builders.MAX_COMPUTE_UNITS),
    route: instructions,
    lookupTables: read.tables,
    lifetime: run.latest.lifetime ?? PLACEHOLDER_LIFETIME,
    memo: `token-agent-service run ${execution.idempotencyKey}`,
    // Simulated, never sent: resignedSwap signs the one that is.
    sign: false,
  });
  if (trial.size > builders.MAX_TRANSACTION_BYTES) {
    if (!step.lastStep) return FEWER_ACCOUNTS;
    return ends(
      final(
        `the swap transaction is ${trial.size} bytes, over Solana's ${builders.MAX_TRANSACTION_BYTES}, even with a route of at most ${step.maxAccounts} accounts`,
      ),
    );
  }
  const ours = new Set<string>([executor.address, delegate.address, taker.address]);
  const extra = trial.signers.filter((s) => !ours.has(s));
  if (extra.length > 0) {
    return ends(
      run.refusals.retry(
        "signer",
        `the swap route was refused before signing: it needs signers besides the executor, the delegate and the run's taker (${extra.join(", ")})`,
      ),
    );
  }
  return trial;
}

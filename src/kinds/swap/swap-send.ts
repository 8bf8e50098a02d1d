/**
 * A checked swap signed and sent: the trial's own compiled message with its final budget and
 * lifetime, kept in the slot's journal before it goes out (sent-transactions.ts: exactly once per
 * agent and slot, across retries and replicas).
 */
import type { SentOutcome } from "../../scheduler/sent-transactions.ts";
import type { SwapBuild } from "../../token/jupiter-swap-api.ts";
import type { CheckedEndState } from "./swap-end-state.ts";
import { type Proven, stoppedBeforeSigning } from "./swap-result.ts";
import {
  clampedUnitPrice,
  ends,
  LAMPORTS_PER_SIGNATURE,
  type RunEnds,
  retry,
  type SwapRun,
} from "./swap-run.ts";
import type { Trial } from "./swap-trial.ts";

/** The CU limit is this much over what the simulation used. */
const CU_MARGIN = 1.2;

/**
 * Signs and sends the checked trial, unless the agent was paused or deleted meanwhile (read
 * under the run's lease, just before signing) or the run lost its slot: where the transaction
 * ended up, and what it moved as its simulation proved.
 */
export async function signAndSend(
  run: SwapRun,
  route: SwapBuild,
  trial: Trial,
  checked: CheckedEndState,
): Promise<{ readonly outcome: SentOutcome; readonly proven: Proven } | RunEnds> {
  const { builders, execution, signers, swap, sent } = run;
  const { journal, signal } = execution;
  const { writable, before, simulation } = checked;
  const used = simulation.unitsConsumed ?? BigInt(builders.MAX_COMPUTE_UNITS);
  const limit = Math.min(builders.MAX_COMPUTE_UNITS, Math.ceil(Number(used) * CU_MARGIN));
  // Stop means stop: the agent as it is now, read under this run's lease, just before signing.
  if (journal.stillWanted !== undefined && !(await journal.stillWanted())) {
    return ends(stoppedBeforeSigning(swap.config));
  }
  // A cluster that gives no replacement blockhash: the shared one (see shared-transfer-chain).
  const lifetime =
    simulation.replacementBlockhash ?? (await run.options.transfers.getLatestBlockhash(signal));
  run.latest.lifetime = lifetime;
  // The route's price, clamped so that price × the final limit stays within the fee cap.
  const price = clampedUnitPrice(run, route.computeUnitPrice, limit);
  // The trial's own compiled message, its budget and lifetime changed in place: what is
  // signed is what was simulated and checked, but for those three fields.
  const signed = builders.resignedSwap(
    trial.compiled,
    { computeUnitLimit: limit, computeUnitPrice: price, lifetime },
    [signers.executor, signers.delegate, signers.taker],
  );
  const outcome = await sent.send(
    journal,
    {
      signature: signed.signature,
      lastValidBlockHeight: lifetime.lastValidBlockHeight,
      transaction: signed.transaction,
    },
    signal,
  );
  if (outcome === "lease_lost") return ends(retry("the run lost its hold on this slot before sending"));
  // What moved, proven before signing: the end-state check held the owner's input to exactly
  // `units` less; the output is what the simulation paid, at least the route's minimum out.
  const outIndex = writable.indexOf(swap.accounts.ownerOutput);
  const outBefore = builders.tokenFieldsOf(before[outIndex])?.amount ?? 0n;
  const outAfter = builders.tokenFieldsOf(simulation.raw[outIndex])?.amount ?? 0n;
  return {
    outcome,
    proven: {
      inUnits: swap.units,
      outUnits: outAfter - outBefore,
      fee:
        LAMPORTS_PER_SIGNATURE * BigInt(trial.signers.length) +
        (price * BigInt(limit) + 999_999n) / 1_000_000n,
    },
  };
}

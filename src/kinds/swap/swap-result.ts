/**
 * A swap run's results: what it records once its transaction landed (from the attempt's own
 * simulation, or read back from the chain), the reasons of a transaction that failed, and the
 * slots it skips before signing.
 */
import type { JsonObject } from "../../agent/agent-store.ts";
import type { Chain } from "../../chain/chain.ts";
import { UnavailableError } from "../../domain/errors.ts";
import type { ExecutionResult } from "../../scheduler/executor.ts";
import { EXPIRED, type SentOutcome } from "../../scheduler/sent-transactions.ts";
import type { SwapBuild } from "../../token/jupiter-swap-api.ts";
import { uiAmount } from "../../token/token-transaction-from-chain.ts";
import { describe, TOKEN_ERRORS } from "../spend-checks.ts";
import { type Failure, final, retry, type Swap, type SwapConfig, shownPrice } from "./swap-run.ts";

/** Jupiter's custom error for slippage exceeded on chain: a fresh quote may do. */
const SLIPPAGE_EXCEEDED = 6001;
/** Index of the run's own transferChecked out of the owner's account (see swap-transaction.ts). */
const OWN_TRANSFER_INDEX = 3;

/** What a run that simulated and sent its transaction knows of it without reading it back. */
export interface Proven {
  /** Base units out of the owner's input account: exactly the run's amount (the end-state check). */
  readonly inUnits: bigint;
  /** Base units into the owner's output account, as simulated (at least the route's minimum out). */
  readonly outUnits: bigint;
  /** Lamports: the base fee of each signature and the unit price × limit, rounded up. */
  readonly fee: bigint;
}

/**
 * The run's result from where its transaction ended up. `route` and `proven` are the sending
 * attempt's; an attempt that resumed an earlier one's transaction has neither.
 */
export async function settled(
  chain: Chain,
  feePayer: string,
  outcome: SentOutcome,
  swap: Swap,
  route?: SwapBuild,
  proven?: Proven,
): Promise<ExecutionResult> {
  if (outcome.kind === "expired") return retry(EXPIRED);
  if (outcome.kind === "failed") return failedOnChain(outcome.err, feePayer, "on chain");
  const { config, input, output, accounts, signal } = swap;
  let facts: { inUnits: bigint; outUnits: bigint; slot: bigint; fee: bigint };
  if (proven !== undefined) {
    // This attempt simulated and sent it: the status gave the slot, the simulation the amounts.
    facts = { ...proven, slot: outcome.slot };
  } else {
    // An earlier attempt's transaction, found landed: only the chain knows what it moved.
    const landed = await chain.getTransaction(outcome.tx.signature, signal);
    if (landed === undefined) throw new UnavailableError("the swap landed but cannot be read back yet");
    const delta = (account: string) => {
      const index = landed.accountKeys.indexOf(account);
      const of = (balances: typeof landed.preTokenBalances) =>
        balances.find((b) => b.accountIndex === index)?.amount ?? 0n;
      return of(landed.postTokenBalances) - of(landed.preTokenBalances);
    };
    facts = {
      inUnits: -delta(accounts.ownerInput),
      outUnits: delta(accounts.ownerOutput),
      slot: landed.slot,
      fee: landed.fee,
    };
  }
  const { inUnits, outUnits } = facts;
  const inAmount = uiAmount(inUnits, input.decimals);
  const outAmount = uiAmount(outUnits, output.decimals);
  const result: JsonObject = {
    kind: "swap",
    simulated: false,
    signature: outcome.tx.signature,
    slot: Number(facts.slot),
    fee: Number(facts.fee),
    inputToken: config.inputToken,
    outputToken: config.outputToken,
    inputMint: input.mint,
    outputMint: output.mint,
    inAmount,
    inAmountUnits: inUnits.toString(),
    outAmount,
    outAmountUnits: outUnits.toString(),
    // "simulation": the output as simulated just before signing (the chain guarantees at
    // least minimumOutUnits); "chain": read back from the landed transaction.
    amountsFrom: proven === undefined ? "chain" : "simulation",
    price: inAmount === 0 ? 0 : shownPrice(outAmount / inAmount),
    slippageBps: config.slippageBps,
    ...(swap.usdValue === undefined ? {} : { usdValue: swap.usdValue }),
    taker: swap.taker,
    // Known to the attempt that asked for the route; one that found its transaction landed
    // after a crash has only what the chain says.
    ...(route === undefined
      ? {}
      : {
          quotedOutAmountUnits: route.outAmount.toString(),
          minimumOutUnits: route.minimumOut.toString(),
          priceImpactPct: route.priceImpactPct,
          routeLabels: [...route.routeLabels],
        }),
  };
  return { ok: true, result };
}

/**
 * A transaction error (simulated or on chain, as `where` says), as a reason for the run's owner.
 * `feePayer`: the executor, which pays every run's fees.
 */
export function failedOnChain(err: unknown, feePayer: string, where: string): Failure {
  const instruction = (err as { InstructionError?: [unknown, unknown] } | null)?.InstructionError;
  const custom = (instruction?.[1] as { Custom?: unknown } | undefined)?.Custom;
  const code = typeof custom === "bigint" ? Number(custom) : typeof custom === "number" ? custom : undefined;
  if (code === SLIPPAGE_EXCEEDED) {
    return retry(
      `slippage exceeded ${where} (the route's error 6001); the next attempt asks for a fresh quote`,
    );
  }
  // The run's own transfer out of the owner's account: its token errors are the owner's to mend.
  if (
    instruction !== undefined &&
    Number(instruction[0]) === OWN_TRANSFER_INDEX &&
    code !== undefined &&
    TOKEN_ERRORS[code] !== undefined
  ) {
    return final(TOKEN_ERRORS[code] as string);
  }
  if (err === "AccountNotFound" || err === "InsufficientFundsForFee") {
    return retry(`the executor cannot pay fees: fund ${feePayer} (the swap failed ${where}: ${err})`);
  }
  return retry(`the swap failed ${where} (${describe(err)})`);
}

/** A slot skipped because the wallet has no account to receive the swap's output. */
export function noOutputAccount(swap: Swap): ExecutionResult {
  const { config, accounts } = swap;
  return {
    ok: true,
    skipped: true,
    result: {
      kind: "swap",
      skipped: true,
      reason: `the wallet has no ${config.outputToken} account to receive the swap (its associated token account ${accounts.ownerOutput}): the service does not pay for the owner's accounts; sign the transaction PrepareApproval gives, which creates it, or create it from the wallet`,
      inputToken: config.inputToken,
      outputToken: config.outputToken,
      outputAccount: accounts.ownerOutput,
    },
  };
}

/** A slot skipped because the agent was paused or deleted while the run was under way. */
export function stoppedBeforeSigning(config: SwapConfig): ExecutionResult {
  return {
    ok: true,
    skipped: true,
    result: {
      kind: "swap",
      skipped: true,
      reason: "the agent was paused or deleted while this run was under way: nothing was signed",
      inputToken: config.inputToken,
      outputToken: config.outputToken,
    },
  };
}

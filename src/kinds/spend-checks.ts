/**
 * What every kind that spends a wallet's tokens under its approval checks before signing, in the
 * same words: the caps in dollars, the token program's errors no retry mends, and whether the
 * owner's account can give the amount to the agent's own delegate.
 */
import type { TokenAccountState } from "../chain/chain.ts";

export interface TransferCaps {
  /** Largest value one run may move, in US dollars at the price source's price. */
  readonly perRunUsd: number;
  /** Largest value one agent may move per UTC day (its runs' slots that day), in US dollars. */
  readonly perDayUsd: number;
}

/** SPL Token's error codes that no retry can mend (Token-2022 shares them). */
export const TOKEN_ERRORS: Record<number, string> = {
  1: "the source's balance or the delegate's allowance is below the amount",
  4: "the agent's delegate is not the source's delegate (no allowance: sign the transaction PrepareApproval gives)",
  17: "the source's token account is frozen",
};

/** A transaction error in the cluster's JSON form, as text. */
export function describe(err: unknown): string {
  return typeof err === "string"
    ? err
    : JSON.stringify(err, (_k, v) => (typeof v === "bigint" ? Number(v) : v));
}

/**
 * The owner's account a run spends `units` from (`state`, undefined when there is none), or why
 * it cannot: no account, a frozen one, no allowance for the agent's own delegate, an allowance or
 * a balance below the amount. All are reasons no retry can mend, checked before signing by
 * transfers and swaps alike (one spends the source's tokens, the other the wallet's input), each
 * in its own words: `holder` ("the source"), `wallet` (its wallet, "the source wallet"), `action`
 * ("move").
 */
export function spendableAccount(
  state: TokenAccountState | undefined,
  spend: {
    delegate: string;
    sharedExecutor: string;
    symbol: string;
    units: bigint;
    show: (units: bigint) => string;
  },
  words: { holder: string; wallet: string; action: string },
): { state: TokenAccountState } | { problem: string } {
  const { symbol, units, show } = spend;
  if (state === undefined) return { problem: `${words.wallet} has no ${symbol} account` };
  if (state.frozen) return { problem: `${words.holder}'s ${symbol} account is frozen` };
  const approvalProblem = allowanceProblem(state, spend.delegate, spend.sharedExecutor, symbol);
  if (approvalProblem !== undefined) return { problem: approvalProblem };
  if (state.delegatedAmount < units) {
    return {
      problem: `the allowance (${show(state.delegatedAmount)}) is below the amount to ${words.action} (${show(units)})`,
    };
  }
  if (state.amount < units) {
    return {
      problem: `insufficient balance: ${words.holder} holds ${show(state.amount)}, the run ${words.action}s ${show(units)}`,
    };
  }
  return { state };
}

/**
 * Why `delegate` cannot move the account's tokens, or undefined when the account names it. An
 * account that still names the service's former shared executor was approved before delegates
 * were per owner and wallet: that approval is never spent again, and the owner is told what to do.
 */
export function allowanceProblem(
  state: { delegate: string | undefined },
  delegate: string,
  sharedExecutor: string,
  symbol: string,
): string | undefined {
  if (state.delegate === delegate) return undefined;
  if (state.delegate === sharedExecutor) {
    return `the source's ${symbol} approval names the service's former shared executor ${sharedExecutor}, which no longer moves tokens: approve again with PrepareApproval, which names this agent's own delegate ${delegate}`;
  }
  return `no allowance: the source has not approved this agent's delegate ${delegate} for ${symbol} (sign the transaction PrepareApproval gives)`;
}

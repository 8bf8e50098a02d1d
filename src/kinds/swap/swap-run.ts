/**
 * What the stages of one swap run share (see swap-executor.ts for the run itself): the run's swap
 * and keys, the executor's settings, and the shapes of a stage's answer. Types only from the
 * builders' modules: they bring @solana/kit whole, and are loaded on the first swap.
 */
import type { Chain, RawAccountState, TokenAccountState, TransferChain } from "../../chain/chain.ts";
import type { DelegateKeys } from "../../chain/delegate-keys.ts";
import type { SigningKey } from "../../chain/ed25519-key.ts";
import type { SwapRefusal } from "../../chain/swap-refusals.ts";
import type { RouteKeys } from "../../chain/swap-route.ts";
import type { SwapAccounts } from "../../chain/swap-transaction.ts";
import type { Lifetime, TokenRef } from "../../chain/token-transactions.ts";
import type { Execution, ExecutionResult } from "../../scheduler/executor.ts";
import type { SendHooks, SentTransactions } from "../../scheduler/sent-transactions.ts";
import type { SwapApi } from "../../token/jupiter-swap-api.ts";
import type { PriceSource } from "../../token/token-source.ts";
import { uiAmount } from "../../token/token-transaction-from-chain.ts";
import { spendableAccount, type TransferCaps } from "../spend-checks.ts";

/** The builders, loaded on the first swap: they bring @solana/kit whole (see transfer-executor). */
export const loadBuilders = async () => ({
  ...(await import("../../chain/swap-transaction.ts")),
  ...(await import("../../chain/swap-route.ts")),
  ...(await import("../../chain/token-transactions.ts")),
});

/** The swap executor's options: what every stage of a run may read (swap-executor.ts). */
export interface SwapExecutorOptions {
  readonly chain: Chain;
  readonly transfers: TransferChain;
  readonly swaps: SwapApi;
  /** The service's key: the fee payer of every run, never a delegate. */
  readonly executor: SigningKey;
  readonly delegates: DelegateKeys;
  readonly mintOf: (symbol: string) => string | undefined;
  /** Programs a route may call (SWAP_ALLOWED_PROGRAMS). */
  readonly allowedPrograms: readonly string[];
  /** SWAP_MAX_FEE_LAMPORTS: the most a run's unit price × unit limit may cost. */
  readonly maxFeeLamports: bigint;
  /** SWAP_MAX_PRICE_DEVIATION_BPS: how much worse than the price source's a quote may be. */
  readonly maxPriceDeviationBps: number;
  /** The service's own prices: the reference a quote is compared with, and the USD caps' prices. */
  readonly prices: PriceSource;
  /** The caps per run and per UTC day that transfers have, in US dollars of the input token. */
  readonly caps: TransferCaps;
  readonly pollMs?: number;
  readonly hooks?: SendHooks;
  /** Told of every route refused before signing (metrics). */
  readonly onRefused?: (reason: SwapRefusal) => void;
}

export type Builders = Awaited<ReturnType<typeof loadBuilders>>;

/**
 * A swap agent's config, as CreateAgent checked it: read by the run, and carried in its Swap. A
 * type, not an interface: the agent's JsonObject converts to it only so.
 */
export type SwapConfig = {
  readonly wallet: string;
  readonly inputToken: string;
  readonly outputToken: string;
  readonly amount: number;
  readonly slippageBps: number;
  readonly minPrice?: number;
  readonly maxPrice?: number;
  /**
   * The least output per input (whole tokens) the owner accepts, set by a trigger order: a route
   * whose quote or minimum out is below it is not signed, and the slot is skipped (the order
   * waits for its next observation).
   */
  readonly worstPrice?: number;
};

/** What one run swaps, and where. */
export interface Swap {
  readonly config: SwapConfig;
  readonly input: TokenRef;
  readonly output: TokenRef;
  readonly units: bigint;
  readonly accounts: SwapAccounts;
  /** The run's taker: the one key the route was built for and signed by. */
  readonly taker: string;
  readonly signal: AbortSignal;
  /** The run's value in dollars at the price source's price (counted toward the cap per day). */
  usdValue?: number;
}

/** The three keys that sign a run's transaction, and no other. */
export interface RunSigners {
  /** The service's key: the fee payer. */
  readonly executor: SigningKey;
  /** The owner's delegate for (owner, wallet): the authority of the run's own transfer. */
  readonly delegate: SigningKey;
  /** The run's taker, derived from (owner, wallet, agent, slot). */
  readonly taker: SigningKey;
}

/** The newest lifetime a simulation answered: a trial's blockhash (the simulation replaces it). */
export interface LatestLifetime {
  lifetime: Lifetime | undefined;
}

/** One attempt of a swap run as its stages read it, from its route on. */
export interface SwapRun {
  readonly options: SwapExecutorOptions;
  /** Programs a route may call (SWAP_ALLOWED_PROGRAMS). */
  readonly allowed: ReadonlySet<string>;
  readonly builders: Builders;
  readonly execution: Execution;
  readonly swap: Swap;
  readonly signers: RunSigners;
  /** The addresses a route is vetted against. */
  readonly keys: RouteKeys;
  readonly refusals: Refusals;
  readonly sent: SentTransactions;
  /** Shared by the executor's runs. */
  readonly latest: LatestLifetime;
}

export type Failure = Extract<ExecutionResult, { ok: false }>;
/** A failure the slot's next attempt may mend. */
export const retry = (error: string): Failure => ({ ok: false, error });
/** A failure no attempt mends: the slot fails now. */
export const final = (error: string): Failure => ({ ok: false, error, retryable: false });

/** A route refused before signing, told to `onRefused` (metrics), retried or final. */
export interface Refusals {
  retry(reason: SwapRefusal, error: string): Failure;
  final(reason: SwapRefusal, error: string): Failure;
}

export function refusals(onRefused: ((reason: SwapRefusal) => void) | undefined): Refusals {
  return {
    retry(reason, error) {
      onRefused?.(reason);
      return retry(error);
    },
    final(reason, error) {
      onRefused?.(reason);
      return final(error);
    },
  };
}

/**
 * A stage that ends the run: its result. Any other answer of a stage goes on to the next. A class,
 * told apart with instanceof: a stage's other answers hold what the Swap API said, and no answer
 * of its can pass for one.
 */
export class RunEnds {
  readonly result: ExecutionResult;
  constructor(result: ExecutionResult) {
    this.result = result;
  }
}

export const ends = (result: ExecutionResult): RunEnds => new RunEnds(result);

/** The base fee of one signature, in lamports. */
export const LAMPORTS_PER_SIGNATURE = 5_000n;

export const minBig = (a: bigint, b: bigint) => (a < b ? a : b);

/** The route's unit price, clamped so that price × `limit` stays within SWAP_MAX_FEE_LAMPORTS. */
export function clampedUnitPrice(run: SwapRun, routePrice: bigint | undefined, limit: number): bigint {
  return minBig(routePrice ?? 0n, run.builders.unitPriceCap(run.options.maxFeeLamports, limit));
}

/** Accounts one getMultipleAccounts may ask for. */
const MAX_ACCOUNTS_PER_READ = 100;

/** Accounts as stored, in calls of at most 100 (getMultipleAccounts' own limit), side by side. */
export async function getAccountsBatched(
  transfers: TransferChain,
  addresses: readonly string[],
  signal: AbortSignal,
): Promise<readonly (RawAccountState | undefined)[]> {
  if (addresses.length <= MAX_ACCOUNTS_PER_READ) return transfers.getAccounts(addresses, signal);
  const parts: Promise<readonly (RawAccountState | undefined)[]>[] = [];
  for (let at = 0; at < addresses.length; at += MAX_ACCOUNTS_PER_READ) {
    parts.push(transfers.getAccounts(addresses.slice(at, at + MAX_ACCOUNTS_PER_READ), signal));
  }
  return (await Promise.all(parts)).flat();
}

/**
 * A price as runs show it: 12 significant digits, so a quotient of two decimals reads as one
 * (1.99399, not 1.9939900000000002). A double holds 15-17; the 12 kept are far past any quote's.
 */
export function shownPrice(price: number): number {
  return Number(price.toPrecision(12));
}

/** An amount of the run's input token as a reason shows it. */
export function showIn(swap: Swap, value: bigint): string {
  return `${uiAmount(value, swap.input.decimals)} ${swap.config.inputToken}`;
}

/** Why the owner's input account cannot pay this run (no retry mends it), or undefined. */
export function ownerInputProblem(run: SwapRun, state: TokenAccountState | undefined): string | undefined {
  const { swap, signers } = run;
  const spendable = spendableAccount(
    state,
    {
      delegate: signers.delegate.address,
      sharedExecutor: signers.executor.address,
      symbol: swap.config.inputToken,
      units: swap.units,
      show: (value) => showIn(swap, value),
    },
    { holder: "the wallet", wallet: "the wallet", action: "swap" },
  );
  return "problem" in spendable ? spendable.problem : undefined;
}

import type { AssociatedAccountOf, TokenRef } from "../../chain/token-transactions.ts";
import { baseUnits } from "../../domain/base-units.ts";
import type { Execution, ExecutionResult, Executor, UpstreamBound } from "../../scheduler/executor.ts";
import { createSentTransactions, signingExecutor } from "../../scheduler/sent-transactions.ts";
import { simulateAndCheckEndState } from "./swap-end-state.ts";
import { askRoute, quoteVerdict, referencePrices, valueWithinCaps } from "./swap-quote.ts";
import { settled } from "./swap-result.ts";
import { readBeforeSigning, vettedRoute } from "./swap-route-vetting.ts";
import {
  final,
  type LatestLifetime,
  loadBuilders,
  RunEnds,
  refusals,
  retry,
  type Swap,
  type SwapConfig,
  type SwapExecutorOptions,
  type SwapRun,
} from "./swap-run.ts";
import { signAndSend } from "./swap-send.ts";
import { buildTrial, FEWER_ACCOUNTS } from "./swap-trial.ts";

export type { SwapExecutorOptions } from "./swap-run.ts";

/** maxAccounts asked for, in turn, while the transaction is over 1,232 bytes (undefined: Jupiter's own). */
const MAX_ACCOUNTS_STEPS: readonly (number | undefined)[] = [undefined, 32, 20];

/**
 * Swap agents' runs on the chain, one atomic v0 transaction each (see swap-transaction.ts). Each
 * run has its own taker, derived from DELEGATE_SEED and the (owner, wallet, agent, slot): the
 * owner's delegate moves exactly `amount` of the input token from the owner's account into the
 * taker's, and the route from the Swap API (asked with the taker as taker and as payer,
 * and the owner's output account as destination) swaps it into the owner's output account; the
 * service's last instruction closes the taker's account, its rent back to the executor.
 *
 * A hostile or buggy route can take nothing but this run's input, and must pay at least its
 * minimum out. Before signing:
 * - the quote is the run's amount, its minimum within it, and its price within
 *   SWAP_MAX_PRICE_DEVIATION_BPS of the service's own price source; the run's value within the
 *   transfer caps per run and per day (swap-quote.ts);
 * - the route is vetted (swap-route.ts, through swap-route-vetting.ts): it may name neither the
 *   executor nor the delegate, nor call the System program, hand authority away, or close
 *   anything but the taker's account;
 * - its lookup tables are read from the chain (one that is not there refuses the route);
 * - the compute budget is the service's: the unit price is the route's, clamped so that price ×
 *   limit stays within SWAP_MAX_FEE_LAMPORTS (swap-trial.ts, and swap-send.ts for the final limit);
 * - the transaction is simulated with every account it may write named, and each that the
 *   executor, the delegate or the owner's wallet owns, is delegate of or is close authority of
 *   must end as it began, except the owner's input (exactly `amount` less), the owner's output (at
 *   least the minimum more) and the executor (at most one bounded fee: the rent of the taker's
 *   account comes back when the transaction closes it) (swap-end-state.ts);
 * - the owner's output account exists: the wallet creates it (PrepareApproval's transaction), and
 *   a run that finds it missing skips its slot rather than pay its rent;
 * - the agent is read again, fenced by the run's lease: paused or deleted since the run began,
 *   the slot is dropped (swap-send.ts).
 *
 * A quote outside the agent's price band (minPrice, maxPrice: the output token's price in units of
 * the input token) skips the slot; a minimum out that implies a price below minPrice is refused.
 *
 * Exactly once, through the slot's journal as transfers (sent-transactions.ts). The run below
 * reads as these steps, each a stage that either hands the next what it needs or ends the run
 * with its result (swap-run.ts: what the stages share); a transaction over Solana's size asks
 * the Swap API again for a route of fewer accounts.
 */
export function createSwapExecutor(options: SwapExecutorOptions): Executor {
  const { chain, transfers, executor, delegates, swaps, prices, caps } = options;
  const allowed = new Set(options.allowedPrograms);
  const sent = createSentTransactions({ transfers, pollMs: options.pollMs, hooks: options.hooks });
  const refused = refusals(options.onRefused);
  let accountOf: AssociatedAccountOf | undefined;
  const latest: LatestLifetime = { lifetime: undefined };

  // Runs wait on the Swap API for their routes: the scheduler runs at most as many swaps as it
  // takes builds at once (none is refused for want of room), out of its count while they wait.
  const routeBound: UpstreamBound | undefined =
    swaps.maxCalls === undefined ? undefined : { name: SWAP_API_UPSTREAM, calls: swaps.maxCalls };
  return {
    ...signingExecutor(run),
    ...(routeBound === undefined ? {} : { upstreamOf: () => routeBound }),
  };

  async function run(execution: Execution): Promise<ExecutionResult> {
    const { agent, journal, signal } = execution;
    const config = agent.config as SwapConfig;
    const { wallet } = config;
    const input = await tokenOf(config.inputToken, signal);
    if (typeof input === "string") return final(input);
    const output = await tokenOf(config.outputToken, signal);
    if (typeof output === "string") return final(output);
    if (agent.decimals !== undefined && agent.decimals !== input.decimals) {
      return final(
        `${config.inputToken}'s mint has ${input.decimals} decimals on this chain, not the ${agent.decimals} this agent's amount was checked with: the agent does not run; create it again to use this mint`,
      );
    }
    const units = baseUnits(config.amount, input.decimals);
    const builders = await loadBuilders();
    accountOf ??= builders.createAssociatedAccountCache();
    const delegate = delegates.keyOf(agent.owner, wallet);
    // The same (owner, wallet, agent, slot) gives the same taker on every attempt and replica.
    const taker = delegates.takerOf(agent.owner, wallet, agent.agentId, execution.idempotencyKey);
    const accounts = await builders.swapAccountsOf(wallet, taker.address, input, output, accountOf);
    const swap: Swap = { config, input, output, units, accounts, taker: taker.address, signal };

    // What earlier attempts sent decides whether this one may sign at all.
    const earlier = await sent.resume(journal, signal);
    if (earlier !== undefined) return settled(chain, executor.address, earlier, swap);

    // The service's own prices: the caps in dollars, and the reference a quote is held to.
    const reference = await referencePrices(prices, input, output, config, signal);
    if (typeof reference === "string") return retry(reference);
    const usdValue = await valueWithinCaps(swap, caps, journal, reference.inputUsd);
    if (typeof usdValue !== "number") return usdValue;
    swap.usdValue = usdValue;
    const stages: SwapRun = {
      options,
      allowed,
      builders,
      execution,
      swap,
      signers: { executor, delegate, taker },
      keys: {
        executor: executor.address,
        delegate: delegate.address,
        wallet,
        taker: taker.address,
        takerInput: accounts.takerInput,
      },
      refusals: refused,
      sent,
      latest,
    };

    for (const [step, maxAccounts] of MAX_ACCOUNTS_STEPS.entries()) {
      const route = await askRoute(stages, maxAccounts);
      if (route instanceof RunEnds) return route.result;
      const verdict = quoteVerdict(stages, route, reference.outPerIn);
      if (verdict !== undefined) return verdict;
      const instructions = vettedRoute(stages, route);
      if (instructions instanceof RunEnds) return instructions.result;
      const read = await readBeforeSigning(stages, route, instructions);
      if (read instanceof RunEnds) return read.result;
      const lastStep = step === MAX_ACCOUNTS_STEPS.length - 1;
      const trial = await buildTrial(stages, route, instructions, read, { maxAccounts, lastStep });
      if (trial === FEWER_ACCOUNTS) continue;
      if (trial instanceof RunEnds) return trial.result;
      const checked = await simulateAndCheckEndState(stages, route, trial, read);
      if (checked instanceof RunEnds) return checked.result;
      const signed = await signAndSend(stages, route, trial, checked);
      if (signed instanceof RunEnds) return signed.result;
      return settled(chain, executor.address, signed.outcome, swap, route, signed.proven);
    }
    return retry("no swap route could be built");
  }

  /** A catalog token as the chain has it, or why it cannot be swapped. */
  async function tokenOf(symbol: string, signal: AbortSignal): Promise<TokenRef | string> {
    const mint = options.mintOf(symbol);
    const account = mint === undefined ? undefined : await chain.getMint(mint, signal);
    if (mint === undefined || account === undefined) return `${symbol} has no mint on this chain`;
    const refused = account.extensions.filter((e) => e === "TransferFeeConfig" || e === "TransferHook");
    if (refused.length > 0) {
      return `${symbol}'s mint now carries ${refused.join(" and ")}: a swap's amount would not arrive whole`;
    }
    return { mint, program: account.program, decimals: account.decimals };
  }
}

/** The name under which swap runs share the Swap API's bound in the scheduler. */
const SWAP_API_UPSTREAM = "swap_api";

import type { Chain, RawAccountState, Simulated, TransferChain } from "../../chain/chain.ts";
import type { DelegateKeys } from "../../chain/delegate-keys.ts";
import type { SigningKey } from "../../chain/ed25519-key.ts";
import type { SwapRefusal } from "../../chain/swap-refusals.ts";
import type { AssociatedAccountOf, TokenRef } from "../../chain/token-transactions.ts";
import { baseUnits } from "../../domain/base-units.ts";
import type { Execution, ExecutionResult, Executor, UpstreamBound } from "../../scheduler/executor.ts";
import {
  createSentTransactions,
  type SendHooks,
  signingExecutor,
} from "../../scheduler/sent-transactions.ts";
import type { SwapApi } from "../../token/jupiter-swap-api.ts";
import type { PriceSource } from "../../token/token-source.ts";
import type { TransferCaps } from "../spend-checks.ts";
import { askRoute, quoteVerdict, referencePrices, valueWithinCaps } from "./swap-quote.ts";
import { failedOnChain, settled, stoppedBeforeSigning } from "./swap-result.ts";
import { readBeforeSigning, vettedRoute } from "./swap-route-vetting.ts";
import {
  final,
  getAccountsBatched,
  LAMPORTS_PER_SIGNATURE,
  type LatestLifetime,
  loadBuilders,
  minBig,
  refusals,
  retry,
  type Swap,
  type SwapConfig,
  type SwapRun,
} from "./swap-run.ts";

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

/** maxAccounts asked for, in turn, while the transaction is over 1,232 bytes (undefined: Jupiter's own). */
const MAX_ACCOUNTS_STEPS: readonly (number | undefined)[] = [undefined, 32, 20];
/** The CU limit is this much over what the simulation used. */
const CU_MARGIN = 1.2;
/** A trial's lifetime before any simulation answered one: the simulation replaces its blockhash. */
const PLACEHOLDER_LIFETIME = { blockhash: "11111111111111111111111111111111", lastValidBlockHeight: 0n };

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
 *   transfer caps per run and per day;
 * - the route is vetted (swap-route.ts): it may name neither the executor nor the delegate, nor
 *   call the System program, hand authority away, or close anything but the taker's account;
 * - its lookup tables are read from the chain (one that is not there refuses the route);
 * - the compute budget is the service's: the unit price is the route's, clamped so that price ×
 *   limit stays within SWAP_MAX_FEE_LAMPORTS;
 * - the transaction is simulated with every account it may write named, and each that the
 *   executor, the delegate or the owner's wallet owns, is delegate of or is close authority of
 *   must end as it began, except the owner's input (exactly `amount` less), the owner's output (at
 *   least the minimum more) and the executor (at most one bounded fee: the rent of the taker's
 *   account comes back when the transaction closes it);
 * - the owner's output account exists: the wallet creates it (PrepareApproval's transaction), and
 *   a run that finds it missing skips its slot rather than pay its rent;
 * - the agent is read again, fenced by the run's lease: paused or deleted since the run began,
 *   the slot is dropped.
 *
 * A quote outside the agent's price band (minPrice, maxPrice: the output token's price in units of
 * the input token) skips the slot; a minimum out that implies a price below minPrice is refused.
 *
 * Exactly once, through the slot's journal as transfers (sent-transactions.ts).
 */
export function createSwapExecutor(options: SwapExecutorOptions): Executor {
  const { chain, transfers, executor, delegates, swaps, prices, caps } = options;
  const allowed = new Set(options.allowedPrograms);
  const sent = createSentTransactions({ transfers, pollMs: options.pollMs, hooks: options.hooks });
  let accountOf: AssociatedAccountOf | undefined;
  const latest: LatestLifetime = { lifetime: undefined };
  const refused = refusals(options.onRefused);

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
    const keys = {
      executor: executor.address,
      delegate: delegate.address,
      wallet,
      taker: taker.address,
      takerInput: accounts.takerInput,
    };
    const stages: SwapRun = {
      options,
      allowed,
      builders,
      execution,
      swap,
      signers: { executor, delegate, taker },
      keys,
      refusals: refused,
      sent,
      latest,
    };

    for (const [step, maxAccounts] of MAX_ACCOUNTS_STEPS.entries()) {
      const route = await askRoute(stages, maxAccounts);
      if ("ends" in route) return route.ends;
      const verdict = quoteVerdict(stages, route, reference.outPerIn);
      if (verdict !== undefined) return verdict;
      const instructions = vettedRoute(stages, route);
      if ("ends" in instructions) return instructions.ends;
      const read = await readBeforeSigning(stages, route, instructions);
      if ("ends" in read) return read.ends;
      const readBefore = read.accounts;

      // The trial is simulated with the cluster's latest blockhash in place of its own, and the
      // simulation answers it: the signed build's lifetime without a getLatestBlockhash. Until
      // then, any blockhash does (the last one seen, or a placeholder).
      const trial = await builders.swapTransaction({
        feePayer: executor,
        delegate,
        taker,
        owner: wallet,
        input,
        output,
        amount: units,
        accounts,
        computeUnitLimit: builders.MAX_COMPUTE_UNITS,
        // The route's price, clamped so that price × limit stays within the fee cap.
        computeUnitPrice: minBig(
          route.computeUnitPrice ?? 0n,
          builders.unitPriceCap(options.maxFeeLamports, builders.MAX_COMPUTE_UNITS),
        ),
        route: instructions,
        lookupTables: read.tables,
        lifetime: latest.lifetime ?? PLACEHOLDER_LIFETIME,
        memo: `token-agent-service run ${execution.idempotencyKey}`,
        // Simulated, never sent: resignedSwap signs the one that is.
        sign: false,
      });
      if (trial.size > builders.MAX_TRANSACTION_BYTES) {
        if (step < MAX_ACCOUNTS_STEPS.length - 1) continue;
        return final(
          `the swap transaction is ${trial.size} bytes, over Solana's ${builders.MAX_TRANSACTION_BYTES}, even with a route of at most ${maxAccounts} accounts`,
        );
      }
      const ours = new Set<string>([executor.address, delegate.address, taker.address]);
      const extra = trial.signers.filter((s) => !ours.has(s));
      if (extra.length > 0) {
        return refused.retry(
          "signer",
          `the swap route was refused before signing: it needs signers besides the executor, the delegate and the run's taker (${extra.join(", ")})`,
        );
      }

      // Every account the transaction may write, before and (simulated) after: the chain's own
      // answer. The owner's output account too, whether or not the route writes it: the check
      // holds it to the route's minimum out, and a route that pays elsewhere must fail it.
      const writable = [...new Set([...trial.writable, accounts.ownerOutput])];
      // Read above; an account the compiled message writes that the instructions did not name
      // (none known) is read now rather than left out of the check.
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
        return failedOnChain(simulation.err, executor.address, "in its simulation");
      }
      const moved = builders.endStateProblem(
        writable,
        executorAsSimulated(executor.address, writable, before, simulation),
        simulation.raw,
        {
          keys,
          ownerInput: accounts.ownerInput,
          ownerOutput: accounts.ownerOutput,
          amount: units,
          minimumOut: route.minimumOut,
          outputMint: output.mint,
          // The taker's account's rent comes back in the same transaction: only the fee is spent.
          executorSpendBound: options.maxFeeLamports + LAMPORTS_PER_SIGNATURE * BigInt(trial.signers.length),
        },
      );
      if (moved !== undefined) {
        return refused.retry("simulation", `the swap was refused before signing: its simulation ${moved}`);
      }

      const used = simulation.unitsConsumed ?? BigInt(builders.MAX_COMPUTE_UNITS);
      const limit = Math.min(builders.MAX_COMPUTE_UNITS, Math.ceil(Number(used) * CU_MARGIN));
      // Stop means stop: the agent as it is now, read under this run's lease, just before signing.
      if (journal.stillWanted !== undefined && !(await journal.stillWanted())) {
        return stoppedBeforeSigning(config);
      }
      // A cluster that gives no replacement blockhash: the shared one (see shared-transfer-chain).
      const lifetime = simulation.replacementBlockhash ?? (await transfers.getLatestBlockhash(signal));
      latest.lifetime = lifetime;
      // The trial's own compiled message, its budget and lifetime changed in place: what is
      // signed is what was simulated and checked, but for those three fields.
      const signed = builders.resignedSwap(
        trial.compiled,
        {
          computeUnitLimit: limit,
          computeUnitPrice: minBig(
            route.computeUnitPrice ?? 0n,
            builders.unitPriceCap(options.maxFeeLamports, limit),
          ),
          lifetime,
        },
        [executor, delegate, taker],
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
      if (outcome === "lease_lost") return retry("the run lost its hold on this slot before sending");
      // What moved, proven before signing: the end-state check held the owner's input to exactly
      // `units` less; the output is what the simulation paid, at least the route's minimum out.
      const outIndex = writable.indexOf(accounts.ownerOutput);
      const outBefore = builders.tokenFieldsOf(before[outIndex])?.amount ?? 0n;
      const outAfter = builders.tokenFieldsOf(simulation.raw[outIndex])?.amount ?? 0n;
      const price = minBig(
        route.computeUnitPrice ?? 0n,
        builders.unitPriceCap(options.maxFeeLamports, limit),
      );
      return settled(chain, executor.address, outcome, swap, route, {
        inUnits: units,
        outUnits: outAfter - outBefore,
        fee:
          LAMPORTS_PER_SIGNATURE * BigInt(trial.signers.length) +
          (price * BigInt(limit) + 999_999n) / 1_000_000n,
      });
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

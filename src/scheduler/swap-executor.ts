import type { JsonObject } from "../agent/agent-store.ts";
import type { Chain, TokenAccountState, TransferChain } from "../chain/chain.ts";
import type { DelegateKeys } from "../chain/delegate-keys.ts";
import type { SigningKey } from "../chain/ed25519-key.ts";
import type { PlainInstruction, SwapAccounts } from "../chain/swap-transaction.ts";
import type { AssociatedAccountOf, TokenRef } from "../chain/token-transactions.ts";
import { baseUnits } from "../domain/base-units.ts";
import { UnavailableError } from "../domain/errors.ts";
import {
  NoRouteError,
  type SwapApi,
  SwapApiUnavailableError,
  type SwapBuild,
} from "../token/jupiter-swap-api.ts";
import { uiAmount } from "../token/token-transaction-from-chain.ts";
import type { Execution, ExecutionResult, Executor } from "./executor.ts";
import {
  createSentTransactions,
  EXPIRED,
  type SendHooks,
  type SentOutcome,
  signingExecutor,
} from "./sent-transactions.ts";
import { describe, spendableAccount, TOKEN_ERRORS } from "./transfer-executor.ts";

/** The builders, loaded on the first swap: they bring @solana/kit whole (see transfer-executor). */
const loadBuilders = async () => ({
  ...(await import("../chain/swap-transaction.ts")),
  ...(await import("../chain/token-transactions.ts")),
});

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
  readonly pollMs?: number;
  readonly hooks?: SendHooks;
  /** Told of every route refused before signing (metrics). */
  readonly onRefused?: (reason: SwapRefusal) => void;
}

/** Why a route was refused before signing. */
export const SWAP_REFUSALS = [
  "program",
  "authority",
  "signer",
  "simulation",
  "quote",
  "minimum_out",
] as const;
export type SwapRefusal = (typeof SWAP_REFUSALS)[number];

type Failure = Extract<ExecutionResult, { ok: false }>;
const retry = (error: string): Failure => ({ ok: false, error });
const final = (error: string): Failure => ({ ok: false, error, retryable: false });

/** Jupiter's custom error for slippage exceeded on chain: a fresh quote may do. */
const SLIPPAGE_EXCEEDED = 6001;
/** maxAccounts asked for, in turn, while the transaction is over 1,232 bytes (undefined: Jupiter's own). */
const MAX_ACCOUNTS_STEPS: readonly (number | undefined)[] = [undefined, 32, 20];
/** The CU limit is this much over what the simulation used. */
const CU_MARGIN = 1.2;
/** SPL Token instructions no route ever needs and that would hand authority away. */
const AUTHORITY_INSTRUCTIONS: Record<number, string> = {
  4: "Approve",
  5: "Revoke",
  6: "SetAuthority",
  13: "ApproveChecked",
};
const TOKEN_PROGRAMS = new Set([
  "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA",
  "TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb",
]);
/**
 * Index of the run's own transferChecked out of the owner's account: after the unit limit, the
 * unit price (when the route gives one) and the two account creations (see swap-transaction.ts).
 */
const ownTransferIndex = (route: SwapBuild | undefined) => (route?.computeUnitPrice === undefined ? 3 : 4);

/**
 * Swap agents' runs on the chain, one atomic v0 transaction each (see swap-transaction.ts): the
 * owner's delegate for (owner, wallet) moves `amount` of the input token from the owner's account
 * into its own, and the route from the Swap API (asked with the delegate as taker, the executor as
 * payer and the owner's output account as destination) swaps it into the owner's output account.
 *
 * A hostile or buggy route cannot take anything. Before signing: every route program is on the
 * allow-list; no route instruction hands authority away (Approve, SetAuthority) or needs a signer
 * besides the fee payer and the delegate (so never the owner's wallet); at most those two sign.
 * Then the transaction is simulated with the owner's and the delegate's accounts named: the owner's
 * input must go down by exactly `amount`, the owner's output up by at least the quote's minimum,
 * and the delegate's accounts must end as they began. Anything else fails the run, and nothing is
 * sent.
 *
 * A quote outside the agent's price band (minPrice, maxPrice: the output token's price in units of
 * the input token) skips the slot; a minimum out that implies a price below minPrice is refused.
 *
 * Exactly once, through the slot's journal as transfers (sent-transactions.ts).
 */
export function createSwapExecutor(options: SwapExecutorOptions): Executor {
  const { chain, transfers, executor, delegates, swaps } = options;
  const allowed = new Set(options.allowedPrograms);
  const sent = createSentTransactions({ transfers, pollMs: options.pollMs, hooks: options.hooks });
  let accountOf: AssociatedAccountOf | undefined;
  const refuse = (reason: SwapRefusal, error: string): Failure => {
    options.onRefused?.(reason);
    return retry(error);
  };

  return signingExecutor(run);

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
    const showIn = (value: bigint) => `${uiAmount(value, input.decimals)} ${config.inputToken}`;
    const builders = await loadBuilders();
    accountOf ??= builders.createAssociatedAccountCache();
    const delegate = delegates.keyOf(agent.owner, wallet);
    const accounts = await builders.swapAccountsOf(wallet, delegate.address, input, output, accountOf);
    const swap: Swap = { config, input, output, units, accounts, signal };

    // What earlier attempts sent decides whether this one may sign at all.
    const earlier = await sent.resume(journal, signal);
    if (earlier !== undefined) return settled(earlier, swap);

    // The owner's input account: reasons no retry can mend fail the slot now.
    const spendable = spendableAccount(
      await transfers.getTokenAccount(accounts.ownerInput, signal),
      {
        delegate: delegate.address,
        sharedExecutor: executor.address,
        symbol: config.inputToken,
        units,
        show: showIn,
      },
      { holder: "the wallet", wallet: "the wallet", action: "swap" },
    );
    if ("problem" in spendable) return final(spendable.problem);
    const { state } = spendable;

    const [ownerOutput, delegateInput, delegateOutput] = await Promise.all([
      transfers.getTokenAccount(accounts.ownerOutput, signal),
      transfers.getTokenAccount(accounts.delegateInput, signal),
      transfers.getTokenAccount(accounts.delegateOutput, signal),
    ]);
    const before = [state, ownerOutput, delegateInput, delegateOutput] as const;

    for (const [step, maxAccounts] of MAX_ACCOUNTS_STEPS.entries()) {
      let route: SwapBuild;
      try {
        route = await swaps.build({
          inputMint: input.mint,
          outputMint: output.mint,
          amount: units,
          taker: delegate.address,
          payer: executor.address,
          destinationTokenAccount: accounts.ownerOutput,
          slippageBps: config.slippageBps,
          ...(maxAccounts === undefined ? {} : { maxAccounts }),
          signal,
        });
      } catch (error) {
        if (error instanceof NoRouteError) {
          return final(
            `no route: the Swap API found no route from ${showIn(units)} to ${config.outputToken}`,
          );
        }
        if (error instanceof SwapApiUnavailableError)
          return retry(`no swap route could be had: ${error.message}`);
        throw error;
      }
      const verdict = quoteVerdict(route, swap);
      if (verdict !== undefined) return verdict;
      const problem = routeProblem(
        route,
        { wallet, delegate: delegate.address, feePayer: executor.address },
        allowed,
      );
      if (problem !== undefined) {
        return refuse(problem.reason, `the swap route was refused before signing: ${problem.text}`);
      }

      const lifetime = await transfers.getLatestBlockhash(signal);
      const build = (computeUnitLimit: number) =>
        builders.swapTransaction({
          feePayer: executor,
          delegate,
          owner: wallet,
          input,
          output,
          amount: units,
          accounts,
          computeUnitLimit,
          computeUnitPrice: route.computeUnitPrice,
          setup: route.setupInstructions,
          route: [
            route.swapInstruction,
            ...(route.cleanupInstruction === undefined ? [] : [route.cleanupInstruction]),
            ...route.otherInstructions,
          ],
          lookupTables: route.lookupTables,
          lifetime,
          memo: `token-agent-service run ${execution.idempotencyKey}`,
        });
      const trial = await build(builders.MAX_COMPUTE_UNITS);
      if (trial.size > builders.MAX_TRANSACTION_BYTES) {
        if (step < MAX_ACCOUNTS_STEPS.length - 1) continue;
        return final(
          `the swap transaction is ${trial.size} bytes, over Solana's ${builders.MAX_TRANSACTION_BYTES}, even with a route of at most ${maxAccounts} accounts`,
        );
      }
      const extra = trial.signers.filter((s) => s !== executor.address && s !== delegate.address);
      if (extra.length > 0 || trial.signers.length > 2) {
        return refuse(
          "signer",
          `the swap route was refused before signing: it needs signers besides the fee payer and the delegate (${extra.join(", ")})`,
        );
      }

      // Simulated with the accounts named: their end state is the chain's own answer.
      const simulation = await transfers.simulateTransaction(trial.transaction, signal, {
        accounts: [
          accounts.ownerInput,
          accounts.ownerOutput,
          accounts.delegateInput,
          accounts.delegateOutput,
        ],
      });
      if (simulation.err !== null && simulation.err !== undefined) {
        return failedOnChain(simulation.err, route, "in its simulation");
      }
      const moved = movementProblem(before, simulation.accounts, swap, route.minimumOut);
      if (moved !== undefined) {
        return refuse("simulation", `the swap was refused before signing: its simulation ${moved}`);
      }

      const used = simulation.unitsConsumed ?? BigInt(builders.MAX_COMPUTE_UNITS);
      const limit = Math.min(builders.MAX_COMPUTE_UNITS, Math.ceil(Number(used) * CU_MARGIN));
      const signed = await build(limit);
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
      return settled(outcome, swap, route);
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

  /** Skipped out of the band, refused below it, or undefined when the quote may be swapped. */
  function quoteVerdict(route: SwapBuild, swap: Swap): ExecutionResult | undefined {
    const { config, input, output, units } = swap;
    if (route.inAmount !== units) {
      return refuse(
        "quote",
        `the swap route was refused: it quotes ${route.inAmount} base units in, not the run's ${units}`,
      );
    }
    if (route.minimumOut <= 0n || route.minimumOut > route.outAmount) {
      return refuse(
        "quote",
        `the swap route was refused: its minimum out (${route.minimumOut}) is not within its quote (${route.outAmount})`,
      );
    }
    const priceOf = (out: bigint) =>
      shownPrice(uiAmount(out, output.decimals) / uiAmount(units, input.decimals));
    const quoted = priceOf(route.outAmount);
    const band = { minPrice: config.minPrice ?? null, maxPrice: config.maxPrice ?? null };
    const below = config.minPrice !== undefined && quoted < config.minPrice;
    const above = config.maxPrice !== undefined && quoted > config.maxPrice;
    if (below || above) {
      return {
        ok: true,
        skipped: true,
        result: {
          kind: "swap",
          skipped: true,
          reason: `the quoted price ${quoted} ${config.outputToken} per ${config.inputToken} is ${below ? `below minPrice ${config.minPrice}` : `above maxPrice ${config.maxPrice}`}`,
          quotedPrice: quoted,
          ...band,
          inputToken: config.inputToken,
          outputToken: config.outputToken,
          inAmountUnits: route.inAmount.toString(),
          quotedOutAmountUnits: route.outAmount.toString(),
          minimumOutUnits: route.minimumOut.toString(),
          priceImpactPct: route.priceImpactPct,
          routeLabels: [...route.routeLabels],
        },
      };
    }
    const floor = priceOf(route.minimumOut);
    if (config.minPrice !== undefined && floor < config.minPrice) {
      return refuse(
        "minimum_out",
        `the swap route was refused: its minimum out (${uiAmount(route.minimumOut, output.decimals)} ${config.outputToken}) implies a price of ${floor}, below minPrice ${config.minPrice}`,
      );
    }
    return undefined;
  }

  /** The run's result from where its transaction ended up. */
  async function settled(outcome: SentOutcome, swap: Swap, route?: SwapBuild): Promise<ExecutionResult> {
    if (outcome.kind === "expired") return retry(EXPIRED);
    if (outcome.kind === "failed") return failedOnChain(outcome.err, route, "on chain");
    const { config, input, output, accounts, signal } = swap;
    // What moved is read back from the landed transaction's token balances, not the quote.
    const landed = await chain.getTransaction(outcome.tx.signature, signal);
    if (landed === undefined) throw new UnavailableError("the swap landed but cannot be read back yet");
    const delta = (account: string) => {
      const index = landed.accountKeys.indexOf(account);
      const of = (balances: typeof landed.preTokenBalances) =>
        balances.find((b) => b.accountIndex === index)?.amount ?? 0n;
      return of(landed.postTokenBalances) - of(landed.preTokenBalances);
    };
    const inUnits = -delta(accounts.ownerInput);
    const outUnits = delta(accounts.ownerOutput);
    const inAmount = uiAmount(inUnits, input.decimals);
    const outAmount = uiAmount(outUnits, output.decimals);
    const result: JsonObject = {
      kind: "swap",
      simulated: false,
      signature: outcome.tx.signature,
      slot: Number(landed.slot),
      fee: Number(landed.fee),
      inputToken: config.inputToken,
      outputToken: config.outputToken,
      inputMint: input.mint,
      outputMint: output.mint,
      inAmount,
      inAmountUnits: inUnits.toString(),
      outAmount,
      outAmountUnits: outUnits.toString(),
      price: inAmount === 0 ? 0 : shownPrice(outAmount / inAmount),
      slippageBps: config.slippageBps,
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

  /** A transaction error (simulated or on chain), as a reason for the run's owner. */
  function failedOnChain(err: unknown, route: SwapBuild | undefined, where: string): Failure {
    const instruction = (err as { InstructionError?: [unknown, unknown] } | null)?.InstructionError;
    const custom = (instruction?.[1] as { Custom?: unknown } | undefined)?.Custom;
    const code =
      typeof custom === "bigint" ? Number(custom) : typeof custom === "number" ? custom : undefined;
    if (code === SLIPPAGE_EXCEEDED) {
      return retry(
        `slippage exceeded ${where} (the route's error 6001); the next attempt asks for a fresh quote`,
      );
    }
    // The run's own transfer out of the owner's account: its token errors are the owner's to mend.
    const ownTransfer = ownTransferIndex(route);
    if (
      instruction !== undefined &&
      Number(instruction[0]) === ownTransfer &&
      code !== undefined &&
      TOKEN_ERRORS[code] !== undefined
    ) {
      return final(TOKEN_ERRORS[code] as string);
    }
    if (err === "AccountNotFound" || err === "InsufficientFundsForFee") {
      return retry(
        `the executor cannot pay fees: fund ${executor.address} (the swap failed ${where}: ${err})`,
      );
    }
    return retry(`the swap failed ${where} (${describe(err)})`);
  }
}

/**
 * A swap agent's config, as CreateAgent checked it: read by the run, and carried in its Swap. A
 * type, not an interface: the agent's JsonObject converts to it only so.
 */
type SwapConfig = {
  readonly wallet: string;
  readonly inputToken: string;
  readonly outputToken: string;
  readonly amount: number;
  readonly slippageBps: number;
  readonly minPrice?: number;
  readonly maxPrice?: number;
};

/** What one run swaps, and where. */
interface Swap {
  readonly config: SwapConfig;
  readonly input: TokenRef;
  readonly output: TokenRef;
  readonly units: bigint;
  readonly accounts: SwapAccounts;
  readonly signal: AbortSignal;
}

/**
 * Why a route may not be signed, or undefined: a program off the allow-list, an instruction that
 * hands a token account's authority away, or one that needs a signer besides the fee payer and
 * the delegate (the owner's wallet above all).
 */
function routeProblem(
  route: SwapBuild,
  keys: { wallet: string; delegate: string; feePayer: string },
  allowed: ReadonlySet<string>,
): { reason: SwapRefusal; text: string } | undefined {
  const all: [string, PlainInstruction][] = [
    ...route.setupInstructions.map((ix, i): [string, PlainInstruction] => [`setup instruction ${i}`, ix]),
    ["the swap instruction", route.swapInstruction],
    ...(route.cleanupInstruction === undefined
      ? []
      : [["the cleanup instruction", route.cleanupInstruction] as [string, PlainInstruction]]),
    ...route.otherInstructions.map((ix, i): [string, PlainInstruction] => [`other instruction ${i}`, ix]),
  ];
  for (const [name, ix] of all) {
    if (!allowed.has(ix.programAddress)) {
      return {
        reason: "program",
        text: `${name} calls ${ix.programAddress}, a program not on SWAP_ALLOWED_PROGRAMS`,
      };
    }
    if (TOKEN_PROGRAMS.has(ix.programAddress)) {
      const kind = AUTHORITY_INSTRUCTIONS[ix.data[0] ?? -1];
      if (kind !== undefined)
        return { reason: "authority", text: `${name} is a token ${kind}, which no swap needs` };
    }
    for (const account of ix.accounts) {
      if (!account.signer) continue;
      if (account.address === keys.wallet) {
        return { reason: "signer", text: `${name} asks the owner's wallet ${keys.wallet} to sign` };
      }
      if (account.address !== keys.delegate && account.address !== keys.feePayer) {
        return {
          reason: "signer",
          text: `${name} asks ${account.address} to sign, which is neither the fee payer nor the delegate`,
        };
      }
    }
  }
  return undefined;
}

/**
 * Why the simulated end state is not a swap of exactly `units` in for at least `minimumOut` out,
 * with the delegate's accounts as they began; undefined when it is.
 */
function movementProblem(
  before: readonly [
    TokenAccountState,
    TokenAccountState | undefined,
    TokenAccountState | undefined,
    TokenAccountState | undefined,
  ],
  after: readonly (TokenAccountState | undefined)[],
  swap: Swap,
  minimumOut: bigint,
): string | undefined {
  const [ownerInput, ownerOutput, delegateInput, delegateOutput] = before;
  const [inputAfter, outputAfter, delegateInputAfter, delegateOutputAfter] = after;
  const amount = (a: TokenAccountState | undefined) => a?.amount ?? 0n;
  if (inputAfter === undefined) return "leaves the owner's input account closed";
  const spent = ownerInput.amount - inputAfter.amount;
  if (spent !== swap.units)
    return `takes ${spent} base units from the owner's input account, not exactly ${swap.units}`;
  if (inputAfter.owner !== ownerInput.owner) return "changes the owner of the owner's input account";
  if (outputAfter === undefined) return "leaves the owner without an output account";
  if (outputAfter.owner !== ownerInput.owner || outputAfter.mint !== swap.output.mint) {
    return "sends the output to an account that is not the owner's";
  }
  const gained = outputAfter.amount - amount(ownerOutput);
  if (gained < minimumOut) {
    return `adds ${gained} base units to the owner's output account, less than the quote's minimum of ${minimumOut}`;
  }
  for (const [name, was, is] of [
    ["input", delegateInput, delegateInputAfter],
    ["output", delegateOutput, delegateOutputAfter],
  ] as const) {
    if (
      amount(was) !== amount(is) ||
      was?.delegate !== is?.delegate ||
      (was !== undefined && was.owner !== is?.owner)
    ) {
      return `does not leave the delegate's own ${name} account as it began`;
    }
  }
  return undefined;
}

/**
 * A price as runs show it: 12 significant digits, so a quotient of two decimals reads as one
 * (1.99399, not 1.9939900000000002). A double holds 15-17; the 12 kept are far past any quote's.
 */
function shownPrice(price: number): number {
  return Number(price.toPrecision(12));
}

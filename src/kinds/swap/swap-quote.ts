/**
 * A swap run's prices and its route's quote: the service's own prices (the caps in dollars, the
 * reference a quote is held to), the route asked of the Swap API, and the quote held to the run's
 * amount, the agent's price band and the reference.
 */
import type { TokenRef } from "../../chain/token-transactions.ts";
import { UnavailableError } from "../../domain/errors.ts";
import type { ExecutionJournal, ExecutionResult } from "../../scheduler/executor.ts";
import { NoRouteError, SwapApiUnavailableError, type SwapBuild } from "../../token/jupiter-swap-api.ts";
import type { PriceSource } from "../../token/token-source.ts";
import { uiAmount } from "../../token/token-transaction-from-chain.ts";
import type { TransferCaps } from "../spend-checks.ts";
import {
  ends,
  type Failure,
  final,
  ownerInputProblem,
  type RunEnds,
  retry,
  type Swap,
  type SwapConfig,
  type SwapRun,
  showIn,
  shownPrice,
} from "./swap-run.ts";

/**
 * The input token's price in dollars, and the output token's price in input tokens (the
 * reference a quote is held to), from the service's own price source; or why there is none.
 * Fresh prices only (PRICE_TTL_MS): a stale one, served while the source is down, may be
 * anything the source last said, and a route is held to it; with none fresh the attempt is
 * retried, as with any upstream down.
 */
export async function referencePrices(
  prices: PriceSource,
  input: TokenRef,
  output: TokenRef,
  config: SwapConfig,
  signal: AbortSignal,
): Promise<{ inputUsd: number; outPerIn: number } | string> {
  signal.throwIfAborted();
  try {
    const [inPrice, outPrice] = await prices.pricesOf([input.mint, output.mint], { fresh: true });
    const missing = [
      [config.inputToken, inPrice],
      [config.outputToken, outPrice],
    ].find(
      ([, p]) =>
        p === undefined || (p as { unpriced: boolean }).unpriced || !((p as { price: number }).price > 0),
    );
    if (missing !== undefined || inPrice === undefined || outPrice === undefined) {
      return `no price for ${missing?.[0] ?? config.inputToken} to check the swap's caps and quote against`;
    }
    return { inputUsd: inPrice.price, outPerIn: inPrice.price / outPrice.price };
  } catch (error) {
    if (error instanceof UnavailableError) {
      return `no fresh price to check the swap's caps and quote against: ${error.message}`;
    }
    throw error;
  }
}

/**
 * The run's value in dollars (rounded to cents: what the cap per day counts), or the failure of a
 * run over the cap per run, or one that would pass the cap per UTC day with the agent's swaps today.
 */
export async function valueWithinCaps(
  swap: Swap,
  caps: TransferCaps,
  journal: ExecutionJournal,
  inputUsd: number,
): Promise<number | Failure> {
  const usd = swap.config.amount * inputUsd;
  if (usd > caps.perRunUsd) {
    return final(
      `${showIn(swap, swap.units)} (${usd.toFixed(2)} USD) is over the cap of ${caps.perRunUsd} USD per run`,
    );
  }
  const movedToday = (await journal.succeededToday()).reduce(
    (sum, r) => sum + (typeof r.result?.usdValue === "number" ? r.result.usdValue : 0),
    0,
  );
  if (movedToday + usd > caps.perDayUsd) {
    return final(
      `swapping ${usd.toFixed(2)} USD more would pass the cap of ${caps.perDayUsd} USD per day (${movedToday.toFixed(2)} USD swapped today)`,
    );
  }
  return Math.round(usd * 100) / 100;
}

/**
 * The Swap API's route for the run (of at most `maxAccounts` accounts, undefined: the API's own
 * bound), built for the run's taker and into the owner's output account. No route fails the slot;
 * an API that cannot be reached is retried, unless the owner's account cannot pay the run anyway.
 */
export async function askRoute(run: SwapRun, maxAccounts: number | undefined): Promise<SwapBuild | RunEnds> {
  const { options, execution, swap } = run;
  const { config, input, output, units, accounts, signal } = swap;
  try {
    const ask = (slippageBps: number) => () =>
      options.swaps.build({
        inputMint: input.mint,
        outputMint: output.mint,
        amount: units,
        taker: swap.taker,
        // The taker as payer too (Jupiter: "no effect when equal to taker"): the executor's
        // address is never given to the Swap API, and a route instruction that would have
        // the payer fund something names the taker, which holds no lamports, and fails in
        // simulation instead.
        payer: swap.taker,
        destinationTokenAccount: accounts.ownerOutput,
        slippageBps,
        ...(maxAccounts === undefined ? {} : { maxAccounts }),
        signal,
      });
    // Waiting for its turn at the Swap API, the run holds no scheduler slot (see upstreamOf).
    const route = (slippageBps: number) =>
      execution.awaitingUpstream?.(ask(slippageBps)) ?? ask(slippageBps)();
    const first = await route(config.slippageBps);
    // A worst price (a trigger order's) binds the minimum out, not the quote less the slippage: a
    // quote above it with a minimum out below it is asked again with the slippage that leaves the
    // minimum out at the worst price (a fill at market that the owner accepts).
    const headroom = worstPriceHeadroomBps(run, first);
    return headroom === undefined ? first : await route(headroom);
  } catch (error) {
    if (error instanceof NoRouteError) {
      return ends(
        final(`no route: the Swap API found no route from ${showIn(swap, units)} to ${config.outputToken}`),
      );
    }
    if (error instanceof SwapApiUnavailableError) {
      // The owner's account is read with the route's accounts, after the route: with no
      // route, it is read alone, so that what no retry mends still fails the slot at once.
      const problem = ownerInputProblem(
        run,
        await options.transfers.getTokenAccount(accounts.ownerInput, signal),
      );
      if (problem !== undefined) return ends(final(problem));
      return ends(retry(`no swap route could be had: ${error.message}`));
    }
    throw error;
  }
}

/**
 * The slippage, in basis points, that would put a route's minimum out at the run's worst price,
 * when its quote is above that price and its minimum out below it; else undefined.
 */
function worstPriceHeadroomBps(run: SwapRun, route: SwapBuild): number | undefined {
  const { config, input, output, units } = run.swap;
  if (config.worstPrice === undefined) return undefined;
  const priceOf = (out: bigint) => uiAmount(out, output.decimals) / uiAmount(units, input.decimals);
  const quoted = priceOf(route.outAmount);
  if (quoted < config.worstPrice || priceOf(route.minimumOut) >= config.worstPrice) return undefined;
  return Math.max(0, Math.floor(10_000 * (1 - config.worstPrice / quoted)));
}

/**
 * Skipped out of the band, refused below it, or undefined when the quote may be swapped: the route
 * quotes exactly the run's amount in, its minimum out is within its quote, and neither its quote
 * nor its minimum out is much worse than the reference (`outPerIn`, the service's own price).
 */
export function quoteVerdict(run: SwapRun, route: SwapBuild, reference: number): ExecutionResult | undefined {
  const { options, refusals, swap } = run;
  const { config, input, output, units } = swap;
  if (route.inAmount !== units) {
    return refusals.retry(
      "quote",
      `the swap route was refused: it quotes ${route.inAmount} base units in, not the run's ${units}`,
    );
  }
  if (route.minimumOut <= 0n || route.minimumOut > route.outAmount) {
    return refusals.retry(
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
  // Exact, not the shown (rounded) price: a fill a rounding away from the worst price is still worse.
  const exactFloor = uiAmount(route.minimumOut, output.decimals) / uiAmount(units, input.decimals);
  if (config.worstPrice !== undefined && exactFloor < config.worstPrice) {
    return {
      ok: true,
      skipped: true,
      result: {
        kind: "swap",
        skipped: true,
        reason: `the route's minimum out implies ${floor} ${config.outputToken} per ${config.inputToken} (its quote ${quoted}), worse than the order's worst price ${config.worstPrice}: nothing was signed`,
        quotedPrice: quoted,
        minimumOutPrice: floor,
        worstPrice: config.worstPrice,
        inputToken: config.inputToken,
        outputToken: config.outputToken,
        inAmountUnits: route.inAmount.toString(),
        quotedOutAmountUnits: route.outAmount.toString(),
        minimumOutUnits: route.minimumOut.toString(),
        routeLabels: [...route.routeLabels],
      },
    };
  }
  if (config.minPrice !== undefined && floor < config.minPrice) {
    return refusals.retry(
      "minimum_out",
      `the swap route was refused: its minimum out (${uiAmount(route.minimumOut, output.decimals)} ${config.outputToken}) implies a price of ${floor}, below minPrice ${config.minPrice}`,
    );
  }
  // Held to the service's own price: a quote (or a minimum out, the agent's slippage aside)
  // much worse than it is a route that would give the owner's tokens away.
  const deviation = options.maxPriceDeviationBps / 10_000;
  const unit = `${config.outputToken} per ${config.inputToken}`;
  if (quoted < reference * (1 - deviation)) {
    return refusals.final(
      "price",
      `the swap route was refused: its quoted price ${quoted} ${unit} is more than ${options.maxPriceDeviationBps} bps worse than the reference price ${reference} ${unit}`,
    );
  }
  if (floor < reference * (1 - deviation - config.slippageBps / 10_000)) {
    return refusals.final(
      "price",
      `the swap route was refused: its minimum out implies a price of ${floor} ${unit}, more than ${options.maxPriceDeviationBps} bps and the agent's slippage worse than the reference price ${reference} ${unit}`,
    );
  }
  return undefined;
}

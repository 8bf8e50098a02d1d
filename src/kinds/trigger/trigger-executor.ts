/**
 * A trigger order's run: the slot its firing set (or its expiry). A fired order swaps exactly as
 * a swap agent does (the same taker, route vetting, end-state simulation, fee bounds and USD
 * caps), with one bound more: the route's minimum out must respect the owner's worst price
 * (trigger-order.ts). A route worse than it is not signed: the slot is skipped and the order
 * watches again. A slot with no firing is the order's expiry: nothing moves.
 */
import { UnavailableError } from "../../domain/errors.ts";
import type { ExecutedAgent, Execution, ExecutionResult, Executor } from "../../scheduler/executor.ts";
import type { PriceSource } from "../../token/token-source.ts";
import { firingOf, type TriggerFiringState } from "./trigger-firing.ts";
import {
  orderOf,
  otherToken,
  slippageOf,
  type TriggerOrder,
  worstOutPerIn,
  worstPriceUsd,
} from "./trigger-order.ts";

export interface TriggerExecutorOptions {
  /** The swap agents' executor, which a fired order's run is. */
  readonly swap: Executor;
  readonly prices: PriceSource;
  readonly mintOf: (symbol: string) => string | undefined;
  readonly now?: () => Date;
}

/** What a slot with no firing is: the expiry, or (woken early) nothing yet. */
export function unfiredResult(order: TriggerOrder, now: Date): ExecutionResult {
  const expired = now.getTime() >= new Date(order.expiresAt).getTime();
  return {
    ok: true,
    skipped: true,
    result: expired
      ? {
          kind: "trigger",
          expired: true,
          reason: `the order reached its expiresAt (${order.expiresAt}) without firing: nothing moved`,
        }
      : { kind: "trigger", waiting: true, reason: "the order has not fired" },
  };
}

/** The swap a fired leg is, with its worst price; or why it cannot be priced now. */
export async function firedSwap(
  order: TriggerOrder,
  firing: TriggerFiringState,
  prices: PriceSource,
  mintOf: (symbol: string) => string | undefined,
): Promise<{ config: Record<string, unknown>; worstUsd: number } | ExecutionResult> {
  const other = otherToken(order);
  const mint = mintOf(other);
  if (mint === undefined) return { ok: false, error: `${other} is no longer in the catalog` };
  let otherUsd: number | undefined;
  try {
    const [price] = await prices.pricesOf([mint], { fresh: true });
    otherUsd = price === undefined || price.unpriced || price.price <= 0 ? undefined : price.price;
  } catch (error) {
    if (error instanceof UnavailableError) return { ok: false, error: error.message };
    throw error;
  }
  if (otherUsd === undefined) return { ok: false, error: `${other} has no USD price to bound the fill with` };
  const worstUsd = worstPriceUsd(order, firing, firing.referencePriceUsd);
  return {
    worstUsd,
    config: {
      wallet: order.wallet,
      inputToken: order.inputToken,
      outputToken: order.outputToken,
      amount: order.amount,
      slippageBps: slippageOf(order, firing.condition),
      worstPrice: worstOutPerIn(order, worstUsd, otherUsd),
    },
  };
}

/** The swap's result as the order's: its leg and the price it fired on beside the swap's own figures. */
export function asTriggerResult(
  result: ExecutionResult,
  firing: TriggerFiringState,
  worstUsd: number,
): ExecutionResult {
  if (!result.ok) return result;
  return {
    ...result,
    result: {
      ...result.result,
      kind: "trigger",
      leg: firing.leg,
      triggerPriceUsd: firing.priceUsd,
      referencePriceUsd: firing.referencePriceUsd,
      worstPriceUsd: Number(worstUsd.toPrecision(12)),
    },
  };
}

export function createTriggerExecutor(options: TriggerExecutorOptions): Executor {
  const now = options.now ?? (() => new Date());
  const asSwap = (agent: ExecutedAgent, config: Record<string, unknown>): ExecutedAgent => ({
    ...agent,
    type: "swap",
    config: config as ExecutedAgent["config"],
  });
  return {
    async execute(execution: Execution) {
      const order = orderOf(execution.agent.config);
      const firing = firingOf(execution.agent.state);
      if (firing === undefined) return unfiredResult(order, now());
      const swap = await firedSwap(order, firing, options.prices, options.mintOf);
      if (!("worstUsd" in swap)) return swap;
      const result = await options.swap.execute({
        ...execution,
        agent: asSwap(execution.agent, swap.config),
      });
      return asTriggerResult(result, firing, swap.worstUsd);
    },
    upstreamOf: (agent) => options.swap.upstreamOf?.({ ...agent, type: "swap" }),
  };
}

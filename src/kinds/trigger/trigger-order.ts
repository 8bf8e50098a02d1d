/**
 * A trigger order as its config says it, and the arithmetic of its legs: which conditions it
 * watches, and the worst fill each accepts once it fires.
 */
import type { JsonObject } from "../../agent/agent-store.ts";
import type { TriggerCondition, TriggerLeg, TriggerLegName } from "./trigger-book.ts";
import { DEFAULT_LIMIT_SLIPPAGE_BPS, DEFAULT_STOP_SLIPPAGE_BPS } from "./trigger-settings.ts";

/** A trigger agent's config, as CreateAgent stored it (normalised). */
export type TriggerOrder = {
  readonly wallet: string;
  readonly inputToken: string;
  readonly outputToken: string;
  readonly amount: number;
  /** The token whose USD price is watched: one of the two. */
  readonly triggerToken: string;
  readonly orderType: "single" | "oco";
  readonly triggerCondition?: TriggerCondition;
  readonly triggerPriceUsd?: number;
  readonly takeProfitPriceUsd?: number;
  readonly stopLossPriceUsd?: number;
  readonly slippageBps?: number;
  /** ISO 8601, UTC. */
  readonly expiresAt: string;
};

export const orderOf = (config: JsonObject) => config as unknown as TriggerOrder;

/** The conditions an order watches: one, or an OCO's two on one approval. */
export function legsOf(
  agentId: string,
  order: TriggerOrder,
  token: string,
): { leg: TriggerLegName; condition: TriggerCondition; priceUsd: number; agentId: string; token: string }[] {
  if (order.orderType === "oco") {
    return [
      {
        agentId,
        token,
        leg: "take_profit",
        condition: "above",
        priceUsd: order.takeProfitPriceUsd as number,
      },
      { agentId, token, leg: "stop_loss", condition: "below", priceUsd: order.stopLossPriceUsd as number },
    ];
  }
  return [
    {
      agentId,
      token,
      leg: "single",
      condition: order.triggerCondition as TriggerCondition,
      priceUsd: order.triggerPriceUsd as number,
    },
  ];
}

/** The order buys its trigger token (it is the output), or sells it. */
export const buysTrigger = (order: TriggerOrder) => order.triggerToken === order.outputToken;

/**
 * Whether a leg protects (a sell below, a buy above: a stop) rather than waits for a better price
 * (a buy below, a sell above: a limit or a take-profit). A stop fills at market: its worst price
 * is based on the price it fired on, so a gap through the stop still fills.
 */
export const protects = (order: TriggerOrder, condition: TriggerCondition) =>
  buysTrigger(order) ? condition === "above" : condition === "below";

/** The worst fill a leg accepts, in basis points from its base. */
export const slippageOf = (order: TriggerOrder, condition: TriggerCondition) =>
  order.slippageBps ?? (protects(order, condition) ? DEFAULT_STOP_SLIPPAGE_BPS : DEFAULT_LIMIT_SLIPPAGE_BPS);

/**
 * The worst price of the trigger token a fired leg accepts, in USD: from the trigger level for an
 * order that waits for a better price, from the reference it fired on for one that protects,
 * moved by the slippage against the owner.
 */
export function worstPriceUsd(
  order: TriggerOrder,
  leg: Pick<TriggerLeg, "condition" | "priceUsd">,
  referenceUsd: number,
) {
  const base = protects(order, leg.condition) ? referenceUsd : leg.priceUsd;
  const slip = slippageOf(order, leg.condition) / 10_000;
  return buysTrigger(order) ? base * (1 + slip) : base * (1 - slip);
}

/**
 * The least output per input (whole tokens) a fill may give, from the worst USD price of the
 * trigger token and the USD price of the order's other token now.
 */
export function worstOutPerIn(order: TriggerOrder, worstUsd: number, otherUsd: number): number {
  return buysTrigger(order) ? otherUsd / worstUsd : worstUsd / otherUsd;
}

/** The order's other token: the one that is not watched. */
export const otherToken = (order: TriggerOrder) =>
  buysTrigger(order) ? order.inputToken : order.outputToken;

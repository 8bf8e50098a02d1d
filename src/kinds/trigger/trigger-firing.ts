/**
 * A trigger order's firing, as it is kept on the agent (AgentRecord.state) from the moment one
 * replica confirmed its condition until the run that follows settles: the leg, the level and the
 * reference price it fired on, and the observations that confirmed it.
 */
import type { JsonObject } from "../../agent/agent-store.ts";
import type { TriggerCondition, TriggerLegName } from "./trigger-book.ts";

export interface TriggerFiringState {
  readonly leg: TriggerLegName;
  readonly condition: TriggerCondition;
  /** The leg's level, in USD. */
  readonly priceUsd: number;
  /** The last confirming observation: the price the order fired on, in USD. */
  readonly referencePriceUsd: number;
  /** The confirming observations, oldest first. */
  readonly observations: readonly { readonly priceUsd: number; readonly at: string }[];
  /** ISO 8601. */
  readonly firedAt: string;
  /** The watch (replica) whose firing landed. */
  readonly firedBy?: string;
}

/** The firing an agent's state holds, or undefined while it waits. */
export function firingOf(state: JsonObject | undefined): TriggerFiringState | undefined {
  const firing = state?.firing;
  return firing !== null && typeof firing === "object" && !Array.isArray(firing)
    ? (firing as unknown as TriggerFiringState)
    : undefined;
}

export const firingState = (firing: TriggerFiringState): JsonObject => ({
  firing: firing as unknown as JsonObject,
});

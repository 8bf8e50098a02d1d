import type { AgentKind, KindWatch } from "../agent-kind.ts";
import { createSwapKindExecutor } from "../swap/swap-kind.ts";
import { simulateSwap } from "../swap/swap-simulation.ts";
import { asTriggerResult, createTriggerExecutor, firedSwap, unfiredResult } from "./trigger-executor.ts";
import { firingOf } from "./trigger-firing.ts";
import { orderOf } from "./trigger-order.ts";
import { createTriggerSettings, type TriggerSettingsOptions } from "./trigger-settings.ts";
import type { TriggerSightings } from "./trigger-sightings.ts";
import { triggerTiming } from "./trigger-timing.ts";

export interface TriggerKindOptions extends TriggerSettingsOptions {
  /** What this replica's watch saw of each token (by mint). */
  readonly sightings: TriggerSightings;
  readonly mintOf: (symbol: string) => string | undefined;
}

/**
 * A trigger order: gives `amount` of `inputToken` from `wallet` for `outputToken` once, when the
 * USD price of `triggerToken` holds above or below a level (or, OCO, the first of a take-profit
 * and a stop-loss), before `expiresAt`. The watch (trigger-watch.ts) fires it; its run is a
 * swap's, bounded by the owner's worst price. Its result: a swap's, with `kind: "trigger"`, the
 * `leg`, `referencePriceUsd` and `worstPriceUsd` (docs/agents.md).
 */
export function createTriggerKind(options: TriggerKindOptions): AgentKind {
  const { sightings, mintOf } = options;
  const now = options.now;
  return {
    name: "trigger",
    settings: createTriggerSettings(options),
    spending: (c) => ({
      wallet: c.wallet as string,
      token: c.inputToken as string,
      amount: c.amount as number,
    }),
    // The wallet's output account: created by the approval's transaction, the wallet paying.
    receiving: (c) => ({ owner: c.wallet as string, symbol: c.outputToken as string }),
    createExecutor: (s) =>
      createTriggerExecutor({ swap: createSwapKindExecutor(s), prices: s.prices, mintOf: s.mintOf, now }),
    async simulate(run) {
      const order = orderOf(run.config);
      const firing = firingOf(run.agent.state);
      if (firing === undefined) return unfiredResult(order, now());
      const swap = await firedSwap(order, firing, run.prices, run.mintOf);
      if (!("worstUsd" in swap)) return swap;
      const result = await simulateSwap({
        ...run,
        config: { ...run.config, slippageBps: swap.config.slippageBps as number },
      });
      return asTriggerResult(result, firing, swap.worstUsd);
    },
    notice(notices, agent) {
      const routes = notices.swapRoutes?.();
      if (agent.status !== "active" || firingOf(agent.state) !== undefined) return routes;
      const order = orderOf(agent.config);
      const mint = mintOf(order.triggerToken);
      const problem = mint === undefined ? undefined : sightings.problemOf(mint);
      if (problem === undefined) return routes;
      const waiting = `no fresh price of ${order.triggerToken} can be had (${problem}): the order cannot fire until one can`;
      return routes === undefined ? waiting : `${waiting}. ${routes}`;
    },
    watch(agent): KindWatch {
      const order = orderOf(agent.config);
      const mint = mintOf(order.triggerToken);
      const seen = mint === undefined ? undefined : sightings.lastOf(mint);
      const firing = firingOf(agent.state);
      return {
        ...(seen === undefined ? {} : { lastPriceUsd: seen.priceUsd, lastSeenAt: new Date(seen.atMs) }),
        ...(firing === undefined ? {} : { firing }),
      };
    },
    timing: triggerTiming,
  };
}

import type { Executor } from "../../scheduler/executor.ts";
import type { AgentKind, KindServices } from "../agent-kind.ts";
import { createSwapExecutor } from "./swap-executor.ts";
import { SWAP_SETTINGS } from "./swap-settings.ts";
import { simulateSwap } from "./swap-simulation.ts";

/**
 * A swap agent: gives `amount` of `inputToken` from `wallet` for `outputToken` on its schedule, on
 * a route from the Swap API that the executor vets, simulates and checks before signing. Its
 * result: `{ kind: "swap", signature, inputToken, outputToken, inAmount, outAmount, price, ... }`,
 * or a skipped slot's `{ kind: "swap", skipped: true, reason, ... }` (docs/agents.md).
 */
export const swapKind: AgentKind = {
  name: "swap",
  settings: SWAP_SETTINGS,
  spending: (c) => ({
    wallet: c.wallet as string,
    token: c.inputToken as string,
    amount: c.amount as number,
  }),
  // The wallet's output account: created by the approval's transaction, the wallet paying.
  receiving: (c) => ({ owner: c.wallet as string, symbol: c.outputToken as string }),
  createExecutor: (s) => createSwapKindExecutor(s),
  simulate: simulateSwap,
  notice: (notices) => notices.swapRoutes?.(),
};

/** A swap's executor on the service's chain, routes and limits (a trigger order's fill is one too). */
export function createSwapKindExecutor(s: KindServices): Executor {
  return createSwapExecutor({
    chain: s.chain,
    transfers: s.transfers,
    swaps: s.swaps,
    executor: s.executorKey,
    delegates: s.delegates,
    mintOf: s.mintOf,
    allowedPrograms: s.limits.swaps.allowedPrograms,
    maxFeeLamports: s.limits.swaps.maxFeeLamports,
    maxPriceDeviationBps: s.limits.swaps.maxPriceDeviationBps,
    prices: s.prices,
    caps: s.limits.caps,
    ...(s.onSwapRefused === undefined ? {} : { onRefused: s.onSwapRefused }),
    ...(s.hooks === undefined ? {} : { hooks: s.hooks }),
  });
}

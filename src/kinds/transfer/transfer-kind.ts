import type { JsonObject } from "../../agent/agent-store.ts";
import type { AgentKind } from "../agent-kind.ts";
import { createTransferExecutor } from "./transfer-executor.ts";
import { TRANSFER_SETTINGS } from "./transfer-settings.ts";

/**
 * A transfer agent: moves `amount` of `token` from `source` to `destination` on its schedule,
 * signed by the (owner, source) delegate the source approved. Its result: `{ kind: "transfer",
 * signature, token, amount, sender, recipient, ... }`, or a skipped slot's `{ kind: "transfer",
 * skipped: true, reason, ... }` (docs/agents.md).
 */
export const transferKind: AgentKind = {
  name: "transfer",
  settings: TRANSFER_SETTINGS,
  spending: (c) => ({ wallet: c.source as string, token: c.token as string, amount: c.amount as number }),
  // The destination's account: created by the approval's transaction, the wallet paying.
  receiving: (c) => ({ owner: c.destination as string, symbol: c.token as string }),
  createExecutor: (s) =>
    createTransferExecutor({
      chain: s.chain,
      transfers: s.transfers,
      executor: s.executorKey,
      delegates: s.delegates,
      mintOf: s.mintOf,
      prices: s.prices,
      caps: s.limits.caps,
      maxAccountCreationsPerDay: s.limits.maxAccountCreationsPerDay,
      ...(s.onRentSpent === undefined ? {} : { onRentSpent: s.onRentSpent }),
      ...(s.hooks === undefined ? {} : { hooks: s.hooks }),
    }),
  async simulate({ config, signature }) {
    const { source, destination, amount, token } = config;
    return {
      ok: true,
      result: {
        kind: "transfer",
        simulated: true,
        source,
        destination,
        amount,
        token,
        signature,
      } as JsonObject,
    };
  },
};

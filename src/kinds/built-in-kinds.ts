import { type AgentKinds, createAgentKinds } from "./agent-kinds.ts";
import { swapKind } from "./swap/swap-kind.ts";
import { transferKind } from "./transfer/transfer-kind.ts";
import { createTriggerKind, type TriggerKindOptions } from "./trigger/trigger-kind.ts";

/**
 * The registry: one line per kind. The trigger kind needs the service's rules, prices and watch
 * (trigger-kind.ts); without them (tests of the other kinds) it is left out.
 */
export function builtInKinds(options: { readonly trigger?: TriggerKindOptions } = {}): AgentKinds {
  return createAgentKinds([
    transferKind,
    swapKind,
    ...(options.trigger === undefined ? [] : [createTriggerKind(options.trigger)]),
  ]);
}

import { type AgentKinds, createAgentKinds } from "./agent-kinds.ts";
import { swapKind } from "./swap/swap-kind.ts";
import { transferKind } from "./transfer/transfer-kind.ts";

/** The registry: one line per kind. */
export function builtInKinds(): AgentKinds {
  return createAgentKinds([transferKind, swapKind]);
}

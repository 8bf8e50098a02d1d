import type { Executor } from "../scheduler/executor.ts";
import type { AgentKind } from "./agent-kind.ts";
import type { AgentKinds } from "./agent-kinds.ts";

/**
 * One executor over every kind: each agent's run goes to its kind's executor, made once by
 * `executorOf` (the kind's own on the chain, or the simulated one for all).
 */
export function createKindsExecutor(kinds: AgentKinds, executorOf: (kind: AgentKind) => Executor): Executor {
  const executors = new Map(kinds.names.map((name) => [name, executorOf(kinds.of({ type: name }))]));
  const of = (type: string) => {
    const executor = executors.get(type);
    if (executor === undefined) throw new Error(`no agent kind is named ${type}`);
    return executor;
  };
  return {
    execute: (execution) => of(execution.agent.type).execute(execution),
    upstreamOf: (agent) => executors.get(agent.type)?.upstreamOf?.(agent),
  };
}

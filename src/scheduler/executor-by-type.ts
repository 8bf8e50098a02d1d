import type { AgentType } from "../agent/agent-store.ts";
import type { Executor } from "./executor.ts";

/**
 * One executor per agent type: transfers and swaps on the chain, or both simulated
 * (TRANSFER_EXECUTOR=simulated). Keyed by AgentType, so a new type does not compile until it has
 * one.
 */
export function createExecutorByType(executors: Readonly<Record<AgentType, Executor>>): Executor {
  return {
    execute: (execution) => executors[execution.agent.type as AgentType].execute(execution),
    upstreamOf: (agent) => executors[agent.type as AgentType]?.upstreamOf?.(agent),
  };
}

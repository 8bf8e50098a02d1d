/**
 * The executor port: what carries out one run of an agent. The simulated executor on the embedded
 * catalog is the only adapter today; a live chain executor will come behind the same port, so the
 * port is shaped for runs that take seconds and whose outcome can be uncertain:
 *
 * - `idempotencyKey` is the same for every attempt at one (agent, slot), on every replica. An
 *   executor that moves real funds must pass it to the chain (or its own ledger) so that a second
 *   attempt after an uncertain first one cannot pay twice.
 * - `signal` aborts when the lease is lost or the process stops; an executor stops waiting then.
 */
import type { JsonObject } from "../agent/agent-store.ts";

/** What an executor needs of the agent it runs. */
export interface ExecutedAgent {
  readonly agentId: string;
  readonly owner: string;
  readonly type: string;
  readonly config: JsonObject;
}

export interface Execution {
  readonly agent: ExecutedAgent;
  readonly scheduledAt: Date;
  /** 1 for the first attempt at this slot. */
  readonly attempt: number;
  /** Stable per (agent, slot): every attempt, on every replica, sends the same key. */
  readonly idempotencyKey: string;
  readonly signal: AbortSignal;
}

export type ExecutionResult =
  | { readonly ok: true; readonly result: JsonObject }
  /** `error` is shown to the agent's owner in the run history: no internals. */
  | { readonly ok: false; readonly error: string };

export interface Executor {
  execute(execution: Execution): Promise<ExecutionResult>;
}

/** The idempotency key of one (agent, slot). */
export function executionKeyOf(agentId: string, scheduledAt: Date): string {
  return `${agentId}.${scheduledAt.getTime().toString(36)}`;
}

/**
 * The executor port: what carries out one run of an agent. Its adapters are each agent kind's
 * executor on the chain (src/kinds/; a cluster or the embedded one) and the simulated executor,
 * which moves nothing. The port is shaped for runs that take seconds and whose outcome can be
 * uncertain:
 *
 * - `idempotencyKey` is the same for every attempt at one (agent, slot), on every replica. The
 *   chain executors name it in every transaction (a memo) and keep each signed transaction in the
 *   slot's journal before sending it, so that a second attempt after an uncertain first one
 *   cannot pay twice.
 * - `signal` aborts when the lease is lost or the process stops; an executor stops waiting then.
 */
import type { JsonObject } from "../agent/agent-store.ts";
import type { RunRecord, SentTransaction } from "./run-store.ts";

/** What an executor needs of the agent it runs. */
export interface ExecutedAgent {
  readonly agentId: string;
  readonly owner: string;
  readonly type: string;
  readonly config: JsonObject;
  /** The decimals its amount was checked with at creation (see AgentRecord). */
  readonly decimals?: number;
  /** What its kind keeps between runs (see AgentRecord): a trigger order's firing. */
  readonly state?: JsonObject;
}

/**
 * What an attempt knows of its slot beyond itself, through the run store: the transactions earlier
 * attempts (on any replica) signed for it, a way to keep its own before sending them, and the
 * agent's earlier successes the same UTC day (for caps per day).
 */
export interface ExecutionJournal {
  /** Every transaction signed for this slot so far, oldest first. */
  transactions(): Promise<readonly SentTransaction[]>;
  /**
   * Keeps a signed transaction before it is sent. False: this attempt no longer holds the slot;
   * it must not send the transaction.
   */
  record(transaction: Omit<SentTransaction, "generation" | "recordedAt">): Promise<boolean>;
  /** The agent's succeeded runs whose slot falls on the same UTC day as this slot. */
  succeededToday(): Promise<readonly RunRecord[]>;
  /**
   * The agent read again now, fenced by the attempt's lease: false when it was paused or deleted
   * since the run began, or the lease is lost. An executor asks just before it signs, so that a
   * pause or delete that lands while a run waits on a slow upstream stops it. Absent: no store to
   * ask (tests' own journals); the run goes on.
   */
  stillWanted?(): Promise<boolean>;
}

export interface Execution {
  readonly agent: ExecutedAgent;
  readonly scheduledAt: Date;
  /** 1 for the first attempt at this slot. */
  readonly attempt: number;
  /** Stable per (agent, slot): every attempt, on every replica, sends the same key. */
  readonly idempotencyKey: string;
  readonly signal: AbortSignal;
  readonly journal: ExecutionJournal;
  /**
   * Waits for `work`, a call to the upstream this run's agent waits on (Executor.upstreamOf: a
   * swap's route from the Swap API), with the run out of the scheduler's concurrency count, so
   * that a slow upstream does not hold its slots idle while other due runs (transfers) could use
   * them. Absent (tests' own executions), or no upstream bound for this agent: `work` just runs.
   */
  readonly awaitingUpstream?: <T>(work: () => Promise<T>) => Promise<T>;
}

/**
 * An upstream that runs wait on, and how many calls it takes at once, those waiting for a turn
 * included (its bulkhead's concurrency plus queue): past that it refuses calls.
 */
export interface UpstreamBound {
  /** Runs of agents with the same name share the bound. */
  readonly name: string;
  readonly calls: number;
}

export type ExecutionResult =
  /**
   * `skipped`: the executor chose not to act on this slot (a swap quoted outside its price band);
   * the slot settles, nothing moved, and it counts neither as a success nor as a failure.
   */
  | { readonly ok: true; readonly result: JsonObject; readonly skipped?: boolean }
  /**
   * `error` is shown to the agent's owner in the run history: no internals. `retryable: false`
   * says another attempt cannot help (no allowance, too little balance): the slot fails at once.
   */
  | { readonly ok: false; readonly error: string; readonly retryable?: boolean };

export interface Executor {
  execute(execution: Execution): Promise<ExecutionResult>;
  /**
   * The upstream a run of `agent` waits on (one call at a time), if any: the scheduler runs at most
   * its `calls` such runs at once, so that none is refused for want of room, and lets them wait
   * for it out of the concurrency count (Execution.awaitingUpstream).
   */
  upstreamOf?(agent: ExecutedAgent): UpstreamBound | undefined;
}

/** The idempotency key of one (agent, slot). */
export function executionKeyOf(agentId: string, scheduledAt: Date): string {
  return `${agentId}.${scheduledAt.getTime().toString(36)}`;
}

/**
 * An agent kind, as the rest of the service knows it: everything that differs between a transfer,
 * a swap and the kinds to come sits behind this one interface, and nothing else branches on an
 * agent's type. A kind is one folder under src/kinds/ and one line in the registry
 * (built-in-kinds.ts); docs/architecture.md shows how to add one.
 */
import type { KindConfigRules } from "../agent/agent-config.ts";
import type { AgentRecord, JsonObject } from "../agent/agent-store.ts";
import type { Receiving, Spending } from "../agent/approvals.ts";
import type { Chain, TransferChain } from "../chain/chain.ts";
import type { DelegateKeys } from "../chain/delegate-keys.ts";
import type { SigningKey } from "../chain/ed25519-key.ts";
import type { SwapRefusal } from "../chain/swap-refusals.ts";
import type { AgentTiming } from "../scheduler/agent-timing.ts";
import type { ExecutedAgent, ExecutionResult, Executor } from "../scheduler/executor.ts";
import type { SendHooks } from "../scheduler/sent-transactions.ts";
import type { SwapApi } from "../token/jupiter-swap-api.ts";
import type { PriceSource } from "../token/token-source.ts";
import type { TransferCaps } from "./spend-checks.ts";

/** What the service lends a kind's runs: the chain, its keys, prices and routes, and its limits. */
export interface KindServices {
  readonly chain: Chain;
  /** The chain as runs write to it. */
  readonly transfers: TransferChain;
  /** The service's own key: the fee payer of every run, never a delegate. */
  readonly executorKey: SigningKey;
  /** The delegates owners' wallets approve, one per (owner, wallet). */
  readonly delegates: DelegateKeys;
  readonly mintOf: (symbol: string) => string | undefined;
  readonly prices: PriceSource;
  /** Where runs get swap routes (JUPITER_SWAP_URL). */
  readonly swaps: SwapApi;
  readonly limits: KindLimits;
  /** Hears of swap routes refused before signing. */
  readonly onSwapRefused?: ((reason: SwapRefusal) => void) | undefined;
  /** Hears of the rent the executor paid for each account a run created. */
  readonly onRentSpent?: ((lamports: number) => void) | undefined;
  /** Test hooks around a run's first send. */
  readonly hooks?: SendHooks | undefined;
}

/** The service's own bounds on what any run may do (the configuration's). */
export interface KindLimits {
  readonly caps: TransferCaps;
  /** TRANSFER_MAX_ACCOUNT_CREATIONS_PER_DAY. */
  readonly maxAccountCreationsPerDay: number;
  /** SWAP_ALLOWED_PROGRAMS, SWAP_MAX_FEE_LAMPORTS, SWAP_MAX_PRICE_DEVIATION_BPS. */
  readonly swaps: {
    readonly allowedPrograms: readonly string[];
    readonly maxFeeLamports: bigint;
    readonly maxPriceDeviationBps: number;
  };
}

/** A run that moves nothing (TRANSFER_EXECUTOR=simulated): its result from the config and prices. */
export interface SimulatedRun {
  readonly config: JsonObject;
  /** The agent run, and its slot (a trigger order's run tells its firing from its expiry). */
  readonly agent: ExecutedAgent;
  readonly scheduledAt: Date;
  readonly prices: PriceSource;
  readonly mintOf: (symbol: string) => string | undefined;
  /** The simulated signature of this (agent, slot), the same on every attempt and replica. */
  readonly signature: string;
}

/** What a kind may say on every agent of it (Agent.notice), from the service's state now. */
export interface KindNotices {
  /** Where swap routes come from now. */
  readonly swapRoutes?: (() => string) | undefined;
}

/** What a kind that watches something (a trigger order, its price) shows of an agent (Agent.trigger). */
export interface KindWatch {
  /** The last fresh reference price this replica saw, in USD, and when it was observed. */
  readonly lastPriceUsd?: number;
  readonly lastSeenAt?: Date;
  /** What it fired on, once it fired. */
  readonly firing?: {
    readonly leg: string;
    readonly referencePriceUsd: number;
    readonly observations: readonly { readonly priceUsd: number; readonly at: string }[];
    readonly firedAt: string;
  };
}

export interface AgentKind {
  /** The agent's `type` in the API and the store. */
  readonly name: string;
  /** Its config's settings and their rules: CreateAgent's validation, with its errors. */
  readonly settings: KindConfigRules;
  /** What it spends under its wallet's approval: PrepareApproval and the approval check use it. */
  spending(config: JsonObject): Spending;
  /** Where its runs pay into: the account PrepareApproval's transaction creates, the wallet paying. */
  receiving(config: JsonObject): Receiving;
  /** Its run on the chain: plan, build, check, send, record. */
  createExecutor(services: KindServices): Executor;
  /** Its run when nothing moves, with the same result shape (TRANSFER_EXECUTOR=simulated). */
  simulate(run: SimulatedRun): Promise<ExecutionResult>;
  /** A notice for an agent of this kind, or undefined. */
  notice?(notices: KindNotices, agent: AgentRecord): string | undefined;
  /**
   * When its agents run, for a kind that has no `schedule` (a trigger order waits for its price):
   * where they wait, and how a settled slot moves them. Absent: slots of the config's schedule.
   */
  readonly timing?: AgentTiming;
  /** What GetAgent shows of what the agent watches (a trigger order's price), for a kind that watches. */
  watch?(agent: AgentRecord): KindWatch | undefined;
}

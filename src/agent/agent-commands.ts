import {
  FailedPreconditionError,
  type FieldViolation,
  InvalidArgumentError,
  NotFoundError,
} from "../domain/errors.ts";
import { pageLimit } from "../domain/page-limit.ts";
import type { KindWatch } from "../kinds/agent-kind.ts";
import type { AgentKinds } from "../kinds/agent-kinds.ts";
import type { RunPage, RunStore } from "../scheduler/run-store.ts";
import type { ScheduleClock } from "../scheduler/schedule-clock.ts";
import { firstSlotAfter, slotAt } from "../scheduler/slots.ts";
import { type ApprovalPlan, createPrepareApproval } from "./agent-approval-plan.ts";
import type { DecimalsLookup, MintCheck, SymbolLookup } from "./agent-config.ts";
import { type CreateAgentInput, createAgentCreate } from "./agent-create.ts";
import { requireAgentId } from "./agent-input.ts";
import { type AgentPageResult, type ListAgentsInput, listAgents } from "./agent-list.ts";
import type { AgentRecord, AgentStore, ReadOptions } from "./agent-store.ts";
import { type Approvals, approvalNeeded } from "./approvals.ts";
import type { AgentCaps, OwnerCaps } from "./owner-caps.ts";
import type { Schedule } from "./schedule.ts";

export type { ApprovalPlan } from "./agent-approval-plan.ts";
export type { CreateAgentInput } from "./agent-create.ts";
export type { AgentPageResult, ListAgentsInput } from "./agent-list.ts";

export interface RunPageResult extends RunPage {
  readonly limit: number;
  readonly offset: number;
}

export interface AgentCommands {
  /** `caps`: what an admin set on the caller's API key, over the service's caps per owner. */
  create(owner: string, input: CreateAgentInput, caps?: Partial<AgentCaps>): Promise<AgentRecord>;
  get(owner: string, agentId: string, options?: ReadOptions): Promise<AgentRecord>;
  delete(owner: string, agentId: string): Promise<boolean>;
  list(owner: string, input: ListAgentsInput): Promise<AgentPageResult>;
  /** active → paused; paused stays paused. Others: FailedPreconditionError. */
  pause(owner: string, agentId: string): Promise<AgentRecord>;
  /** paused or failed → active at the first slot after now; active stays active. Pending: FailedPreconditionError. */
  resume(owner: string, agentId: string): Promise<AgentRecord>;
  listRuns(owner: string, agentId: string, page: { limit: number; offset: number }): Promise<RunPageResult>;
  /** The executor's address: the fee payer of every run (delegates are per owner and wallet). */
  executor(): string;
  /**
   * The unsigned approval of `allowance` (UI units of the agent's token) for the delegate of the
   * caller's (owner, agent's wallet) pair: a transfer's source and token, a swap's wallet and input
   * token. The agent's owner only.
   */
  prepareApproval(
    owner: string,
    agentId: string,
    allowance: number,
    signal?: AbortSignal,
  ): Promise<ApprovalPlan>;
  /** What a pending agent waits for, in its owner's words; undefined for any other. */
  pendingReason(agent: AgentRecord): string | undefined;
  /** Where the agent's runs go, when its owner should know (a swap agent's routes); else undefined. */
  notice?(agent: AgentRecord): string | undefined;
  /** What the agent watches (a trigger order's price), for a kind that watches; else undefined. */
  watch?(agent: AgentRecord): KindWatch | undefined;
}

export interface AgentCommandsOptions {
  readonly store: AgentStore;
  /** The agent kinds this service runs: their rules, what they spend and their notices. */
  readonly kinds: AgentKinds;
  readonly runs: RunStore;
  readonly lookupSymbol: SymbolLookup;
  /** Decimals of a catalog token: an amount is a whole number of its smallest units. */
  readonly lookupDecimals?: DecimalsLookup;
  /**
   * A catalog token's mint on the chain; CreateAgent refuses tokens whose mint is not there (or, for
   * a swap, carries a transfer fee or hook).
   */
  readonly mintOnChain?: MintCheck;
  /** Approvals for the executor, built on the chain. */
  readonly approvals: Approvals;
  /** Caps per owner (MAX_AGENTS_PER_OWNER, MAX_PENDING_PER_OWNER); absent: none. */
  readonly caps?: OwnerCaps;
  /** Told of each agent created (not of repeats): this replica's scheduler checks it at once. */
  readonly onCreated?: (agent: AgentRecord) => void;
  readonly newId: () => string;
  /** Schedule time (SCHEDULE_TIME_SCALE): slots are computed in it. */
  readonly clock: ScheduleClock;
  readonly now?: () => Date;
  /** Where swap routes come from now, for the kinds that say so on every agent (Agent.notice). */
  readonly swapNotice?: () => string;
}

/**
 * The agent rules of the contract, independent of transport and storage: validation, the initial
 * state of a new agent, paging. The store only persists what these rules decided.
 */
export function createAgentCommands(options: AgentCommandsOptions): AgentCommands {
  const { store, runs, clock } = options;
  const now = options.now ?? (() => new Date());
  /** Slot k of an agent created at `createdAt`, in real time. */
  const slot = (createdAt: Date, schedule: Schedule, k: number) =>
    clock.toReal(slotAt(clock.toSchedule(createdAt), schedule, k));
  /** The first slot of an agent strictly after `after`, in real time (or where its kind waits). */
  const firstSlotAfterNow = (agent: AgentRecord, after: Date) =>
    options.kinds.get(agent.type)?.timing?.nextAfter(agent, after) ??
    clock.toReal(
      firstSlotAfter(
        clock.toSchedule(agent.createdAt),
        agent.config.schedule as Schedule,
        clock.toSchedule(after),
      ),
    );
  async function existing(owner: string, agentId: string): Promise<void> {
    requireAgentId(agentId);
    if ((await store.get(owner, agentId)) === undefined)
      throw new NotFoundError(`agent ${agentId} not found`);
  }
  return {
    create: createAgentCreate({
      ...options,
      now,
      // A kind with a timing of its own waits where it says (a trigger order: until its expiry).
      firstSlot: (type, config, createdAt) =>
        options.kinds.get(type)?.timing?.nextAfter({ config, createdAt }, createdAt) ??
        slot(createdAt, config.schedule as Schedule, 1),
    }),

    async get(owner, agentId, options) {
      requireAgentId(agentId);
      const agent = await store.get(owner, agentId, options);
      if (agent === undefined) throw new NotFoundError(`agent ${agentId} not found`);
      return agent;
    },

    async delete(owner, agentId) {
      requireAgentId(agentId);
      return store.delete(owner, agentId);
    },

    list: (owner, input) => listAgents(store, owner, input, options.kinds.names),

    async pause(owner, agentId) {
      requireAgentId(agentId);
      const agent = await store.update(owner, agentId, (current) => {
        if (current.status === "paused") return undefined;
        if (current.status !== "active") {
          throw new FailedPreconditionError(
            `agent ${agentId} is ${current.status} and only an active agent can be paused`,
          );
        }
        return { status: "paused", nextRunAt: null };
      });
      if (agent === undefined) throw new NotFoundError(`agent ${agentId} not found`);
      return agent;
    },

    async resume(owner, agentId) {
      requireAgentId(agentId);
      const agent = await store.update(owner, agentId, (current) => {
        if (current.status === "active") return undefined;
        if (current.status === "pending") {
          throw new FailedPreconditionError(
            `agent ${agentId} is pending and becomes active by itself once checked. Only a paused or failed agent can be resumed`,
          );
        }
        if (current.status === "completed" || current.status === "expired") {
          throw new FailedPreconditionError(
            `agent ${agentId} is ${current.status}: it has ended and cannot be resumed. Only a paused or failed agent can be resumed`,
          );
        }
        // Missed slots are skipped: the next run is the first slot after now.
        return {
          status: "active",
          nextRunAt: firstSlotAfterNow(current, now()),
          failureReason: null,
          consecutiveFailures: 0,
        };
      });
      if (agent === undefined) throw new NotFoundError(`agent ${agentId} not found`);
      return agent;
    },

    async listRuns(owner, agentId, input) {
      const violations: FieldViolation[] = [];
      const limit = pageLimit(input.limit, violations);
      if (!Number.isInteger(input.offset) || input.offset < 0) {
        violations.push({ field: "offset", description: `must be 0 or greater but is ${input.offset}` });
      }
      if (agentId === "") violations.push({ field: "agentId", description: "is required" });
      if (violations.length > 0) throw new InvalidArgumentError(violations);
      // Runs are the agent owner's: another owner's agent is as unknown as a missing one.
      await existing(owner, agentId);
      const page = await runs.list(owner, agentId, { limit, offset: input.offset });
      return { ...page, limit, offset: input.offset };
    },

    executor: () => options.approvals.feePayer,

    notice(agent) {
      return options.kinds.get(agent.type)?.notice?.({ swapRoutes: options.swapNotice }, agent);
    },

    watch: (agent) => options.kinds.get(agent.type)?.watch?.(agent),

    pendingReason(agent) {
      if (agent.status !== "pending" || !options.approvals.required) return undefined;
      const spending = options.kinds.spendingOf(agent);
      const delegate = options.approvals.delegateOf(agent.owner, spending.wallet);
      return `waiting for ${approvalNeeded(spending, delegate)}; it becomes active once the chain shows it`;
    },

    prepareApproval: createPrepareApproval(options),
  };
}

import { createHash } from "node:crypto";
import { baseUnits } from "../domain/base-units.ts";
import {
  alternatives,
  FailedPreconditionError,
  type FieldViolation,
  InvalidArgumentError,
  NotFoundError,
  quote,
} from "../domain/errors.ts";
import { pageLimit } from "../domain/page-limit.ts";
import type { RunPage, RunStore } from "../scheduler/run-store.ts";
import type { ScheduleClock } from "../scheduler/schedule-clock.ts";
import { firstSlotAfter, slotAt } from "../scheduler/slots.ts";
import {
  amountProblem,
  type DecimalsLookup,
  type MintCheck,
  type SymbolLookup,
  validateAgentConfig,
} from "./agent-config.ts";
import {
  AGENT_STATUSES,
  AGENT_TYPES,
  type AgentListPage,
  type AgentRecord,
  type AgentStatus,
  type AgentStore,
  type JsonObject,
  type ReadOptions,
} from "./agent-store.ts";
import { type ApprovalDraft, type Approvals, approvalNeeded, receivingOf, spendingOf } from "./approvals.ts";
import type { AgentCaps, OwnerCaps } from "./owner-caps.ts";
import type { Schedule } from "./schedule.ts";

/** An approval to sign, and what the owner's agents on that token account need of it. */
export interface ApprovalPlan extends ApprovalDraft {
  /**
   * The most the owner's active and pending agents (transfers and swaps) on this wallet and token
   * can spend in one day, base units: they share this delegate and its one allowance.
   */
  readonly neededPerDay: bigint;
  /** Those agents, this one included. */
  readonly sharedBy: number;
}

/** Empty strings mean "not given", as proto3 strings have no presence. */
export interface CreateAgentInput {
  readonly type: string;
  /** Undefined when the request carried no config at all. */
  readonly config: JsonObject | undefined;
  /** The caller's `idempotency-key`, or "" when none was sent. */
  readonly idempotencyKey: string;
}

export interface ListAgentsInput {
  readonly type: string;
  readonly status: string;
  readonly limit: number;
  readonly offset: number;
  /** Undefined: offset paging. "" or a token: keyset paging (see nextPageToken). */
  readonly pageToken?: string;
  /** The caller's signal, passed down to the store. */
  readonly signal?: AbortSignal;
}

export interface AgentPageResult extends AgentListPage {
  readonly limit: number;
  readonly offset: number;
  /** With keyset paging: the next page's token, "" after the last page. */
  readonly nextPageToken?: string;
}

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
  notice?(agent: { readonly type: string }): string | undefined;
}

/** The most runs of a schedule that fall in one UTC day. */
const RUNS_PER_DAY: Record<Schedule, bigint> = { hourly: 24n, daily: 1n, weekly: 1n, monthly: 1n };
/** Agents of one owner read to add up what shares an approval. */
const MAX_AGENTS_READ = 10_000;

/** Longest idempotency key accepted; keys are stored, so they are bounded. */
const MAX_IDEMPOTENCY_KEY_LENGTH = 255;
/** Longest agent id accepted; ids are 22 characters, so anything far longer is not one. */
const MAX_AGENT_ID_LENGTH = 128;

/**
 * The agent rules of the contract, independent of transport and storage: validation, the initial
 * state of a new agent, paging. The store only persists what these rules decided.
 */
export function createAgentCommands(options: {
  store: AgentStore;
  runs: RunStore;
  lookupSymbol: SymbolLookup;
  /** Decimals of a catalog token: an amount is a whole number of its smallest units. */
  lookupDecimals?: DecimalsLookup;
  /**
   * A catalog token's mint on the chain; CreateAgent refuses tokens whose mint is not there (or, for
   * a swap, carries a transfer fee or hook).
   */
  mintOnChain?: MintCheck;
  /** Approvals for the executor, built on the chain. */
  approvals: Approvals;
  /** Caps per owner (MAX_AGENTS_PER_OWNER, MAX_PENDING_PER_OWNER); absent: none. */
  caps?: OwnerCaps;
  /** Told of each agent created (not of repeats): this replica's scheduler checks it at once. */
  onCreated?: (agent: AgentRecord) => void;
  newId: () => string;
  /** Schedule time (SCHEDULE_TIME_SCALE): slots are computed in it. */
  clock: ScheduleClock;
  now?: () => Date;
  /** Where swap routes come from now, said on every swap agent (Agent.notice). */
  swapNotice?: () => string;
}): AgentCommands {
  const { store, runs, lookupSymbol, newId, clock } = options;
  const now = options.now ?? (() => new Date());
  /** Slot k of an agent created at `createdAt`, in real time. */
  const slot = (createdAt: Date, schedule: Schedule, k: number) =>
    clock.toReal(slotAt(clock.toSchedule(createdAt), schedule, k));
  /** The first slot of an agent strictly after `after`, in real time. */
  const firstSlotAfterNow = (agent: AgentRecord, after: Date) =>
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
    async create(owner, input, caps) {
      const violations: FieldViolation[] = [];
      const type = oneOf(input.type, AGENT_TYPES, "type", violations, true);
      if (input.idempotencyKey.length > MAX_IDEMPOTENCY_KEY_LENGTH) {
        violations.push({
          field: "idempotency-key",
          description: `must be at most ${MAX_IDEMPOTENCY_KEY_LENGTH} characters`,
        });
      }
      if (input.config === undefined) violations.push({ field: "config", description: "is required" });
      const valid =
        type !== undefined && input.config !== undefined
          ? await validateAgentConfig(
              type,
              input.config,
              lookupSymbol,
              violations,
              options.lookupDecimals,
              options.mintOnChain,
            )
          : undefined;
      if (violations.length > 0 || type === undefined || valid === undefined) {
        throw new InvalidArgumentError(violations);
      }
      const createdAt = now();
      const record: AgentRecord = {
        agentId: newId(),
        owner,
        type,
        status: "pending",
        config: valid.config,
        createdAt,
        nextRunAt: slot(createdAt, valid.schedule, 1),
        // Pinned: a run refuses a mint whose decimals changed since, as the amount would mean another value.
        ...(valid.decimals === undefined ? {} : { decimals: valid.decimals }),
      };
      // Checked after validation: a create that would be refused anyway takes no place.
      const giveBack = (await options.caps?.reserve(owner, caps)) ?? (() => {});
      try {
        const result = await store.create(
          input.idempotencyKey === ""
            ? { record }
            : {
                record,
                idempotencyKey: input.idempotencyKey,
                fingerprint: fingerprintOf(type, valid.config),
              },
        );
        if (!result.created) giveBack();
        else options.onCreated?.(result.agent);
        return result.agent;
      } catch (error) {
        giveBack();
        throw error;
      }
    },

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

    async list(owner, input) {
      const violations: FieldViolation[] = [];
      const type = oneOf(input.type, AGENT_TYPES, "type", violations, false);
      const status = oneOf<AgentStatus>(input.status, AGENT_STATUSES, "status", violations, false);
      const limit = pageLimit(input.limit, violations);
      if (!Number.isInteger(input.offset) || input.offset < 0) {
        violations.push({ field: "offset", description: `must be 0 or greater but is ${input.offset}` });
      }
      const filterKey = `${input.type}|${input.status}`;
      const after =
        input.pageToken === undefined ? undefined : cursorOf(input.pageToken, filterKey, violations);
      if (input.pageToken !== undefined && input.offset !== 0) {
        violations.push({ field: "offset", description: "must be 0 when page_token is given" });
      }
      if (violations.length > 0) throw new InvalidArgumentError(violations);
      const page = await store.list(owner, {
        ...(type === undefined ? {} : { type }),
        ...(status === undefined ? {} : { status }),
        limit,
        offset: input.offset,
        ...(after === undefined ? {} : { after }),
        ...(input.signal === undefined ? {} : { signal: input.signal }),
      });
      if (input.pageToken === undefined) return { ...page, limit, offset: input.offset };
      const last = page.agents.at(-1);
      const more = last !== undefined && page.agents.length === limit;
      return {
        ...page,
        limit,
        offset: input.offset,
        nextPageToken: more ? tokenOf(last.createdAt, last.agentId, filterKey) : "",
      };
    },

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
      return agent.type === "swap" ? options.swapNotice?.() : undefined;
    },

    pendingReason(agent) {
      if (agent.status !== "pending" || !options.approvals.required) return undefined;
      const delegate = options.approvals.delegateOf(agent.owner, spendingOf(agent).wallet);
      return `waiting for ${approvalNeeded({ type: agent.type, config: agent.config, delegate })}; it becomes active once the chain shows it`;
    },

    async prepareApproval(owner, agentId, allowance, signal) {
      requireAgentId(agentId);
      // Another owner's agent is as unknown as a missing one: only the owner learns it exists.
      const agent = await store.get(owner, agentId, signal === undefined ? {} : { signal });
      if (agent === undefined) throw new NotFoundError(`agent ${agentId} not found`);
      const { wallet, token: symbol } = spendingOf(agent);
      const decimals = await options.lookupDecimals?.(symbol);
      if (!Number.isFinite(allowance) || allowance <= 0) {
        throw InvalidArgumentError.field("allowance", "must be a finite number greater than 0");
      }
      const problem = decimals === undefined ? undefined : amountProblem(allowance, decimals, symbol);
      if (problem !== undefined || decimals === undefined) {
        throw InvalidArgumentError.field("allowance", problem ?? `cannot be checked: ${symbol} is unknown`);
      }
      const delegate = options.approvals.delegateOf(owner, wallet);
      const draft = await options.approvals.prepare(
        // The account the agent's runs pay into is the wallet's to create, and to pay for.
        {
          wallet,
          delegate,
          symbol,
          allowance: baseUnits(allowance, decimals),
          creates: [receivingOf(agent)],
        },
        signal,
      );
      // The wallet would sign and pay for a transaction the chain refuses: say why now instead.
      if (draft.tokenAccountState === "missing") {
        throw new FailedPreconditionError(
          `the wallet ${wallet} has no ${symbol} token account yet (its associated token account ${draft.tokenAccount}), so an approval cannot land: receive some ${symbol} there (or create that account) first, then ask again`,
        );
      }
      if (draft.tokenAccountState === "frozen") {
        throw new FailedPreconditionError(
          `the wallet ${wallet}'s ${symbol} token account ${draft.tokenAccount} is frozen, so an approval cannot land`,
        );
      }
      // Every agent of this owner on this wallet and token spends through the same delegate and
      // allowance (an SPL account has one delegate, and approving again replaces the amount).
      let neededPerDay = 0n;
      let sharedBy = 0;
      for (let offset = 0; offset < MAX_AGENTS_READ; offset += 100) {
        const page = await store.list(owner, {
          limit: 100,
          offset,
          ...(signal === undefined ? {} : { signal }),
        });
        for (const other of page.agents) {
          if (other.status !== "active" && other.status !== "pending") continue;
          // Transfers and swaps alike: one delegate per (owner, wallet), one allowance per token.
          const spends = spendingOf(other);
          if (spends.wallet !== wallet || spends.token !== symbol) continue;
          sharedBy++;
          const schedule = other.config.schedule as Schedule;
          neededPerDay += baseUnits(spends.amount, decimals) * (RUNS_PER_DAY[schedule] ?? 1n);
        }
        if (page.agents.length < 100) break;
      }
      return { ...draft, neededPerDay, sharedBy };
    },
  };
}

/**
 * A keyset page token: the last agent of a page (its createdAt and id) and the filter it was made
 * for, as base64url JSON. Opaque to callers; checked, so a token cannot be replayed on another
 * filter or forged into a malformed query.
 */
function tokenOf(createdAt: Date, agentId: string, filterKey: string): string {
  return Buffer.from(JSON.stringify([createdAt.getTime(), agentId, filterKey])).toString("base64url");
}

function cursorOf(
  token: string,
  filterKey: string,
  violations: FieldViolation[],
): { createdAt: Date; agentId: string } | undefined {
  if (token === "") return undefined;
  let parsed: unknown[] | undefined;
  try {
    parsed = token.length <= 512 ? JSON.parse(Buffer.from(token, "base64url").toString("utf8")) : undefined;
  } catch {
    parsed = undefined;
  }
  if (!Array.isArray(parsed)) parsed = undefined;
  const valid =
    parsed !== undefined &&
    parsed.length === 3 &&
    Number.isSafeInteger(parsed[0]) &&
    typeof parsed[1] === "string" &&
    parsed[1].length <= MAX_AGENT_ID_LENGTH &&
    typeof parsed[2] === "string";
  if (!valid || parsed === undefined) {
    violations.push({ field: "page_token", description: "is not a token this service issued" });
    return undefined;
  }
  if (parsed[2] !== filterKey) {
    violations.push({ field: "page_token", description: "was issued for other type and status filters" });
    return undefined;
  }
  return { createdAt: new Date(parsed[0] as number), agentId: parsed[1] as string };
}

/**
 * What identifies a create request for its idempotency key: the type and the validated config
 * (defaults applied, symbols in catalog spelling), hashed over canonical JSON (keys sorted), so
 * that the same request spelled differently is still the same request.
 */
function fingerprintOf(type: string, config: JsonObject): string {
  const canonical = (value: unknown): unknown =>
    value !== null && typeof value === "object" && !Array.isArray(value)
      ? Object.fromEntries(
          Object.keys(value)
            .sort()
            .map((k) => [k, canonical((value as Record<string, unknown>)[k])]),
        )
      : Array.isArray(value)
        ? value.map(canonical)
        : value;
  return createHash("sha256")
    .update(JSON.stringify([type, canonical(config)]))
    .digest("base64url");
}

function oneOf<T extends string>(
  value: string,
  allowed: readonly T[],
  field: string,
  violations: FieldViolation[],
  required: boolean,
): T | undefined {
  if (value === "") {
    if (required)
      violations.push({ field, description: `is required and must be one of ${alternatives(allowed)}` });
    return undefined;
  }
  if ((allowed as readonly string[]).includes(value)) return value as T;
  violations.push({ field, description: `must be one of ${alternatives(allowed)} but is ${quote(value)}` });
  return undefined;
}

function requireAgentId(agentId: string): void {
  if (agentId === "") throw InvalidArgumentError.field("agentId", "is required");
  if (agentId.length > MAX_AGENT_ID_LENGTH) {
    throw InvalidArgumentError.field("agentId", `must be at most ${MAX_AGENT_ID_LENGTH} characters`);
  }
}

import { alternatives, type FieldViolation, InvalidArgumentError, NotFoundError } from "../domain/errors.ts";
import { pageLimit } from "../domain/page-limit.ts";
import { type SymbolLookup, validateAgentConfig } from "./agent-config.ts";
import {
  AGENT_STATUSES,
  AGENT_TYPES,
  type AgentListPage,
  type AgentRecord,
  type AgentStatus,
  type AgentStore,
  type JsonObject,
} from "./agent-store.ts";
import { nextRunAfter } from "./schedule.ts";

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
}

export interface AgentPageResult extends AgentListPage {
  readonly limit: number;
  readonly offset: number;
}

export interface AgentCommands {
  create(owner: string, input: CreateAgentInput): Promise<AgentRecord>;
  get(owner: string, agentId: string): Promise<AgentRecord>;
  delete(owner: string, agentId: string): Promise<boolean>;
  list(owner: string, input: ListAgentsInput): Promise<AgentPageResult>;
}

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
  lookupSymbol: SymbolLookup;
  newId: () => string;
  now?: () => Date;
}): AgentCommands {
  const { store, lookupSymbol, newId } = options;
  const now = options.now ?? (() => new Date());
  return {
    async create(owner, input) {
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
          ? await validateAgentConfig(type, input.config, lookupSymbol, violations)
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
        nextRunAt: nextRunAfter(createdAt, valid.schedule),
      };
      const result = await store.create(
        input.idempotencyKey === "" ? { record } : { record, idempotencyKey: input.idempotencyKey },
      );
      return result.agent;
    },

    async get(owner, agentId) {
      requireAgentId(agentId);
      const agent = await store.get(owner, agentId);
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
      if (violations.length > 0) throw new InvalidArgumentError(violations);
      const page = await store.list(owner, {
        ...(type === undefined ? {} : { type }),
        ...(status === undefined ? {} : { status }),
        limit,
        offset: input.offset,
      });
      return { ...page, limit, offset: input.offset };
    },
  };
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
  violations.push({ field, description: `must be one of ${alternatives(allowed)} but is "${value}"` });
  return undefined;
}

function requireAgentId(agentId: string): void {
  if (agentId === "") throw InvalidArgumentError.field("agentId", "is required");
  if (agentId.length > MAX_AGENT_ID_LENGTH) {
    throw InvalidArgumentError.field("agentId", `must be at most ${MAX_AGENT_ID_LENGTH} characters`);
  }
}

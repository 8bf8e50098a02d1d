/** CreateAgent: validation, the initial state of a new agent, the owner's caps, idempotency. */
import { createHash } from "node:crypto";
import { type FieldViolation, InvalidArgumentError } from "../domain/errors.ts";
import type { AgentKinds } from "../kinds/agent-kinds.ts";
import {
  type DecimalsLookup,
  type MintCheck,
  type SymbolLookup,
  validateAgentConfig,
} from "./agent-config.ts";
import { oneOf } from "./agent-input.ts";
import type { AgentRecord, AgentStore, JsonObject } from "./agent-store.ts";
import type { AgentCaps, OwnerCaps } from "./owner-caps.ts";

/** Longest idempotency key accepted; keys are stored, so they are bounded. */
const MAX_IDEMPOTENCY_KEY_LENGTH = 255;

/** Empty strings mean "not given", as proto3 strings have no presence. */
export interface CreateAgentInput {
  readonly type: string;
  /** Undefined when the request carried no config at all. */
  readonly config: JsonObject | undefined;
  /** The caller's `idempotency-key`, or "" when none was sent. */
  readonly idempotencyKey: string;
}

export interface AgentCreateOptions {
  readonly store: AgentStore;
  /** The kinds `type` may name, each with its config's rules. */
  readonly kinds: AgentKinds;
  readonly lookupSymbol: SymbolLookup;
  /** Decimals of a catalog token: an amount is a whole number of its smallest units. */
  readonly lookupDecimals?: DecimalsLookup;
  /** A catalog token's mint on the chain (see AgentCommandsOptions). */
  readonly mintOnChain?: MintCheck;
  /** Caps per owner; absent: none. */
  readonly caps?: OwnerCaps;
  /** Told of each agent created (not of repeats). */
  readonly onCreated?: (agent: AgentRecord) => void;
  readonly newId: () => string;
  readonly now: () => Date;
  /** Slot k of an agent created at `createdAt`, in real time. */
  /** The first slot of a new agent of `type`: its pending agent's nextRunAt. */
  readonly firstSlot: (type: string, config: JsonObject, createdAt: Date) => Date;
}

/** `caps`: what an admin set on the caller's API key, over the service's caps per owner. */
export type CreateAgent = (
  owner: string,
  input: CreateAgentInput,
  caps?: Partial<AgentCaps>,
) => Promise<AgentRecord>;

export function createAgentCreate(options: AgentCreateOptions): CreateAgent {
  const { store, lookupSymbol, newId, now, firstSlot } = options;
  return async (owner, input, caps) => {
    const violations: FieldViolation[] = [];
    const type = oneOf(input.type, options.kinds.names, "type", violations, true);
    const kind = type === undefined ? undefined : options.kinds.get(type);
    if (input.idempotencyKey.length > MAX_IDEMPOTENCY_KEY_LENGTH) {
      violations.push({
        field: "idempotency-key",
        description: `must be at most ${MAX_IDEMPOTENCY_KEY_LENGTH} characters`,
      });
    }
    if (input.config === undefined) violations.push({ field: "config", description: "is required" });
    const valid =
      kind !== undefined && input.config !== undefined
        ? await validateAgentConfig(
            kind,
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
      nextRunAt: firstSlot(type, valid.config, createdAt),
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
  };
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

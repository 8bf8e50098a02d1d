/** ListAgents: filters, offset paging, and keyset paging by page token. */
import { type FieldViolation, InvalidArgumentError } from "../domain/errors.ts";
import { pageLimit } from "../domain/page-limit.ts";
import { MAX_AGENT_ID_LENGTH, oneOf } from "./agent-input.ts";
import { AGENT_STATUSES, type AgentListPage, type AgentStatus, type AgentStore } from "./agent-store.ts";

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

/** The owner's agents as `input` asks for them, checked first. */
export async function listAgents(
  store: AgentStore,
  owner: string,
  input: ListAgentsInput,
  /** The kinds' names: the values the `type` filter accepts. */
  kinds: readonly string[],
): Promise<AgentPageResult> {
  const violations: FieldViolation[] = [];
  const type = oneOf(input.type, kinds, "type", violations, false);
  const status = oneOf<AgentStatus>(input.status, AGENT_STATUSES, "status", violations, false);
  const limit = pageLimit(input.limit, violations);
  if (!Number.isInteger(input.offset) || input.offset < 0) {
    violations.push({ field: "offset", description: `must be 0 or greater but is ${input.offset}` });
  }
  const filterKey = `${input.type}|${input.status}`;
  const after = input.pageToken === undefined ? undefined : cursorOf(input.pageToken, filterKey, violations);
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

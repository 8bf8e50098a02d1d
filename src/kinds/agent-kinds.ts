import type { Receiving, Spending } from "../agent/approvals.ts";
import type { AgentKind } from "./agent-kind.ts";

/** The kinds a service runs, by name: what the scheduler, the store and the API ask about a kind. */
export interface AgentKinds {
  /** Their names, in registry order: the values `type` accepts. */
  readonly names: readonly string[];
  /** The kind named `name`, or undefined. */
  get(name: string): AgentKind | undefined;
  /** The kind of a stored agent; throws for a name no kind has (a store written by a newer service). */
  of(agent: { readonly type: string }): AgentKind;
  spendingOf(agent: { readonly type: string; readonly config: Config }): Spending;
  receivingOf(agent: { readonly type: string; readonly config: Config }): Receiving;
}

type Config = Parameters<AgentKind["spending"]>[0];

/** A registry of `kinds`; their names must differ. */
export function createAgentKinds(kinds: readonly AgentKind[]): AgentKinds {
  const byName = new Map<string, AgentKind>();
  for (const kind of kinds) {
    if (byName.has(kind.name)) throw new Error(`two agent kinds are named ${kind.name}`);
    byName.set(kind.name, kind);
  }
  const of = (agent: { readonly type: string }) => {
    const kind = byName.get(agent.type);
    if (kind === undefined) throw new Error(`no agent kind is named ${agent.type}`);
    return kind;
  };
  return {
    names: [...byName.keys()],
    get: (name) => byName.get(name),
    of,
    spendingOf: (agent) => of(agent).spending(agent.config),
    receivingOf: (agent) => of(agent).receiving(agent.config),
  };
}

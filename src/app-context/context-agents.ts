/** The agent commands of the context, on its stores and its chain, and who hears of new agents. */

import { type AgentCommands, createAgentCommands } from "../agent/agent-commands.ts";
import { newAgentId } from "../agent/agent-id.ts";
import type { AgentRecord, AgentStore } from "../agent/agent-store.ts";
import { type AgentCap, createOwnerCaps } from "../agent/owner-caps.ts";
import type { Chain, TransferChain } from "../chain/chain.ts";
import { createChainApprovals } from "../chain/chain-approvals.ts";
import type { DelegateKeys } from "../chain/delegate-keys.ts";
import type { SigningKey } from "../chain/ed25519-key.ts";
import type { Config } from "../config.ts";
import type { AgentKinds } from "../kinds/agent-kinds.ts";
import type { RunStore } from "../scheduler/run-store.ts";
import type { ScheduleClock } from "../scheduler/schedule-clock.ts";
import { type Catalog, catalogSymbolLookup } from "../token/catalog.ts";

export interface ContextAgentsOptions {
  readonly config: Config;
  readonly store: AgentStore;
  readonly runs: RunStore;
  readonly scheduleClock: ScheduleClock;
  readonly catalog: Catalog;
  readonly chain: Chain;
  readonly transfers: TransferChain;
  /** The agent kinds: their rules, what they spend and their notices. */
  readonly kinds: AgentKinds;
  readonly executorKey: SigningKey;
  readonly delegates: DelegateKeys;
  readonly mintOf: (symbol: string) => string | undefined;
  /** Runs move real tokens: an agent waits for its approval. */
  readonly realTransfers: boolean;
  /** Hears of CreateAgent calls refused at a cap per owner. */
  readonly onAgentCapReached?: ((cap: AgentCap) => void) | undefined;
  /** Where swap routes come from now, in owners' words (Agent.notice). */
  readonly swapNotice?: (() => string) | undefined;
  readonly now?: (() => Date) | undefined;
}

export interface ContextAgents {
  readonly agents: AgentCommands;
  /** Tells `listener` of every agent CreateAgent creates in this process. */
  onAgentCreated(listener: (agent: AgentRecord) => void): void;
}

export function createContextAgents(options: ContextAgentsOptions): ContextAgents {
  const { config, store, runs, scheduleClock, catalog, chain, transfers, executorKey, delegates, mintOf } =
    options;
  const canonicalSymbol = catalogSymbolLookup(catalog);
  const decimals = new Map(catalog.tokens.map((t) => [t.symbol, t.decimals]));
  const createdListeners = new Set<(agent: AgentRecord) => void>();
  const agents = createAgentCommands({
    kinds: options.kinds,
    store,
    runs,
    clock: scheduleClock,
    lookupSymbol: async (symbol) => canonicalSymbol(symbol),
    // The token list's decimals are the mints' real ones, so creating an agent needs no chain call.
    lookupDecimals: async (symbol) => decimals.get(symbol),
    async mintOnChain(symbol) {
      const mint = mintOf(symbol);
      return mint === undefined ? undefined : await chain.getMint(mint);
    },
    approvals: createChainApprovals({
      chain,
      transfers,
      feePayer: executorKey.address,
      delegates,
      required: options.realTransfers,
      mintOf,
    }),
    onCreated: (agent) => {
      for (const listener of createdListeners) listener(agent);
    },
    caps: createOwnerCaps({
      store,
      defaults: config.agentCaps,
      ...(options.onAgentCapReached === undefined ? {} : { onRefused: options.onAgentCapReached }),
    }),
    newId: newAgentId,
    ...(options.now === undefined ? {} : { now: options.now }),
    ...(options.swapNotice === undefined ? {} : { swapNotice: options.swapNotice }),
  });
  return { agents, onAgentCreated: (listener) => createdListeners.add(listener) };
}

import type { AgentCommands } from "./agent/agent-commands.ts";
import type { AgentRecord, AgentStore } from "./agent/agent-store.ts";
import type { MongoAgentStore } from "./agent/mongo-agent-store.ts";
import type { AgentCap } from "./agent/owner-caps.ts";
import { createContextAgents } from "./app-context/context-agents.ts";
import { createContextExecutor } from "./app-context/context-executor.ts";
import { createContextKinds } from "./app-context/context-kinds.ts";
import { createContextStores } from "./app-context/context-stores.ts";
import { warnOfKeys } from "./app-context/warn-of-keys.ts";
import type { ApiKeyStore } from "./auth/api-key-store.ts";
import { type ApiKeys, createApiKeys } from "./auth/api-keys.ts";
import { createMemoryApiKeyStore } from "./auth/memory-api-key-store.ts";
import type { Chain, TransferChain } from "./chain/chain.ts";
import type { DelegateKeys } from "./chain/delegate-keys.ts";
import type { SigningKey } from "./chain/ed25519-key.ts";
import type { ExecutorBalance } from "./chain/executor-balance.ts";
import type { SwapRefusal } from "./chain/swap-refusals.ts";
import type { Config } from "./config.ts";
import { createAnnouncingAgentStore } from "./events/announcing-agent-store.ts";
import type { EventLog } from "./events/event-log.ts";
import { createMemoryEventLog } from "./events/memory-event-log.ts";
import type { EventRepair } from "./events/mongo-event-repair.ts";
import type { AgentKinds } from "./kinds/agent-kinds.ts";
import type { TransferHooks } from "./kinds/transfer/transfer-executor.ts";
import type { TriggerSightings } from "./kinds/trigger/trigger-sightings.ts";
import type { Logger } from "./logger.ts";
import { type ApprovalCheck, createApprovalCheck } from "./scheduler/approval-check.ts";
import { type CheckClaims, createMemoryCheckClaims } from "./scheduler/check-claims.ts";
import type { Executor } from "./scheduler/executor.ts";
import { createMemoryRunStore } from "./scheduler/memory-run-store.ts";
import type { RunStore } from "./scheduler/run-store.ts";
import { createScheduleClock, type ScheduleClock } from "./scheduler/schedule-clock.ts";
import type { Catalog } from "./token/catalog.ts";
import { createChainTokenSource } from "./token/chain-token-source.ts";
import type { SwapApi } from "./token/jupiter-swap-api.ts";
import { createTokenQueries, type TokenQueries } from "./token/token-queries.ts";
import type { PriceSource, TokenList, TokenSource } from "./token/token-source.ts";
import { createMemoryWebhookStore } from "./webhooks/memory-webhook-store.ts";
import { createWebhookEndpoints, type WebhookEndpoints } from "./webhooks/webhook-endpoints.ts";
import { newEndpointId, newWebhookSecret } from "./webhooks/webhook-secret.ts";
import type { WebhookStore } from "./webhooks/webhook-store.ts";

export { mongoStoreOptions } from "./app-context/context-stores.ts";

/**
 * Everything the service needs at run time, built once from the configuration. It owns the
 * resources (the MongoDB client) and releases them in `destroy()`. Tests override parts.
 */
export interface AppContext {
  readonly config: Config;
  readonly logger: Logger;
  /** The token list: symbols, names, decimals, logos and tags of the tokens the service knows. */
  readonly catalog: Catalog;
  /** The chain token data is read from (a cluster, or the embedded local chain). */
  readonly chain: Chain;
  /** Metadata and transactions, from the chain. */
  readonly tokenSource: TokenSource;
  /** Prices: Jupiter's (JUPITER_API_URL), or the catalog's snapshot. */
  readonly prices: PriceSource;
  /** Names, logos and tags: Jupiter's token list, or the catalog. */
  readonly tokenList: TokenList;
  readonly tokens: TokenQueries;
  readonly agentStore: AgentStore;
  readonly agents: AgentCommands;
  /**
   * Every agent change and run, in one order all replicas share (same database as the agents, or
   * memory): what WatchAgentEvents serves.
   */
  readonly events: EventLog;
  /** Announces changes whose event is missing (MongoDB; in memory none can be). */
  readonly eventRepair: EventRepair | undefined;
  /** Slot leases and run history, beside the agents (same database, or memory). */
  readonly runStore: RunStore;
  /** The agent kinds this service runs (src/kinds/). */
  readonly kinds: AgentKinds;
  /** What this replica's trigger watch saw of each token's price (GetAgent, notices). */
  readonly triggerSightings: TriggerSightings;
  /** Carries out agent runs: transfers and swaps on the chain, or simulated (TRANSFER_EXECUTOR). */
  readonly executor: Executor;
  /**
   * What a pending agent waits for before the scheduler activates it (its wallet's approval of
   * its delegate, and the token account that shows it); undefined when runs
   * move nothing real.
   */
  readonly awaitReady: ApprovalCheck | undefined;
  /** Claims of pending agents' checks, shared by the replicas on this store. */
  readonly checkClaims: CheckClaims;
  /** Tells `listener` of every agent CreateAgent creates in this process. */
  onAgentCreated(listener: (agent: AgentRecord) => void): void;
  /**
   * The fee payer's balance against EXECUTOR_MIN_LAMPORTS, when runs move real tokens (read after
   * runs and periodically once started); undefined when they move nothing.
   */
  readonly executorBalance: ExecutorBalance | undefined;
  /** Schedule time (SCHEDULE_TIME_SCALE). */
  readonly scheduleClock: ScheduleClock;
  /** API keys: verification for the auth interceptor, management for ApiKeyService. */
  readonly apiKeys: ApiKeys;
  /** Webhook endpoints and the outbox of deliveries (same database as the agents, or memory). */
  readonly webhookStore: WebhookStore;
  /** WebhookService's rules. */
  readonly webhooks: WebhookEndpoints;
  /** "mongodb" or "memory": which agent store serves. */
  readonly storeKind: "mongodb" | "memory";
  /** The agent store's MongoDB client, for its connection pool metrics; undefined otherwise. */
  readonly mongoClient: MongoAgentStore["client"] | undefined;
  /** True when every dependency can serve (readiness). Never throws. */
  isReady(): Promise<boolean>;
  /** True when the agent store answers. Never throws. */
  isStoreReady(): Promise<boolean>;
  /** True when the chain answers and is healthy. Never throws. */
  isChainReady(): Promise<boolean>;
  destroy(): Promise<void>;
}

export interface AppContextOverrides {
  readonly tokenSource?: TokenSource;
  readonly prices?: PriceSource;
  readonly agentStore?: AgentStore;
  readonly runStore?: RunStore;
  readonly executor?: Executor;
  /** Test hooks around a run's first send (transfers and swaps). */
  readonly transferHooks?: TransferHooks;
  readonly apiKeyStore?: ApiKeyStore;
  readonly now?: () => Date;
}

/**
 * The context on a chain that is already up (see service.ts, which makes it): the token sources,
 * the stores and the executor.
 */
export async function createAppContext(
  config: Config,
  logger: Logger,
  parts: {
    readonly chain: Chain;
    readonly catalog: Catalog;
    /** The chain as runs write to it. */
    readonly transfers: TransferChain;
    /** The service's own key: the fee payer of every run. */
    readonly executorKey: SigningKey;
    /** The delegates owners' wallets approve, one per (owner, wallet). */
    readonly delegates: DelegateKeys;
    /** Hears of webhook URLs refused at registration for where they point. */
    readonly onWebhookUrlRefused?: (reason: string) => void;
    readonly prices: PriceSource;
    readonly tokenList: TokenList;
    /** Where swap runs get their routes (JUPITER_SWAP_URL). */
    readonly swaps: SwapApi;
    /** Hears of swap routes refused before signing. */
    readonly onSwapRefused?: (reason: SwapRefusal) => void;
    /** Hears of the rent the executor paid for each account a run created. */
    readonly onRentSpent?: (lamports: number) => void;
    /** Where swap routes come from now, in owners' words (Agent.notice). */
    readonly swapNotice?: () => string;
    /** Hears of CreateAgent calls refused at a cap per owner. */
    readonly onAgentCapReached?: (cap: AgentCap) => void;
  },
  overrides: AppContextOverrides = {},
): Promise<AppContext> {
  const { chain, catalog, transfers, executorKey, delegates, tokenList } = parts;
  const prices = overrides.prices ?? parts.prices;
  const tokenSource =
    overrides.tokenSource ??
    createChainTokenSource({ chain, tokenList, concurrency: TRANSACTION_READS_AT_ONCE });
  const stores = await createContextStores(config, logger, overrides);
  const { storeKind, mongoClient, apiKeyStore, eventRepair } = stores;
  const runs = stores.runStore ?? createMemoryRunStore();
  const eventLog = stores.events ?? createMemoryEventLog();
  // Every writer of agents goes through this store, so every change is announced.
  const store = createAnnouncingAgentStore({
    store: stores.store,
    log: eventLog,
    ...(overrides.now === undefined ? {} : { now: overrides.now }),
    onError: (error) => logger.warn({ err: error }, "announcing an agent change failed"),
  });
  const apiKeys = createApiKeys({
    store: apiKeyStore ?? createMemoryApiKeyStore(),
    adminKey: config.auth.adminKey,
    ...(overrides.now === undefined ? {} : { now: overrides.now }),
  });
  warnOfKeys(config, storeKind, apiKeyStore, logger);
  const hooks = stores.webhookStore ?? createMemoryWebhookStore();
  const webhooks = createWebhookEndpoints({
    store: hooks,
    rules: config.webhooks,
    lastEventSeq: () => eventLog.lastSeq(),
    newId: newEndpointId,
    newSecret: newWebhookSecret,
    ...(parts.onWebhookUrlRefused === undefined ? {} : { onRefused: parts.onWebhookUrlRefused }),
    ...(overrides.now === undefined ? {} : { now: overrides.now }),
  });
  const scheduleClock = createScheduleClock({ scale: config.scheduler.timeScale });
  const { kinds, triggerSightings, mintOf } = createContextKinds({
    config,
    catalog,
    prices,
    now: overrides.now,
  });
  const { executor, executorBalance } = createContextExecutor({
    config,
    kinds,
    logger,
    chain,
    transfers,
    executorKey,
    delegates,
    swaps: parts.swaps,
    prices,
    mintOf,
    onSwapRefused: parts.onSwapRefused,
    onRentSpent: parts.onRentSpent,
    transferHooks: overrides.transferHooks,
    executor: overrides.executor,
  });
  const realTransfers = config.transfers.executor === "chain";
  const tokens = createTokenQueries({ prices, tokenList, source: tokenSource });
  const { agents, onAgentCreated } = createContextAgents({
    config,
    kinds,
    store,
    runs,
    scheduleClock,
    catalog,
    chain,
    transfers,
    executorKey,
    delegates,
    mintOf,
    realTransfers,
    onAgentCapReached: parts.onAgentCapReached,
    swapNotice: parts.swapNotice,
    now: overrides.now,
  });
  const isStoreReady = () => answers(store);
  const isChainReady = () => chain.isHealthy(AbortSignal.timeout(config.solana.timeoutMs));
  return {
    config,
    logger,
    catalog,
    chain,
    tokenSource,
    prices,
    tokenList,
    tokens,
    agentStore: store,
    agents,
    events: eventLog,
    eventRepair,
    runStore: runs,
    kinds,
    triggerSightings,
    executor,
    awaitReady: realTransfers
      ? createApprovalCheck({ kinds, chain, transfers, delegates, mintOf })
      : undefined,
    checkClaims: stores.checkClaims ?? createMemoryCheckClaims(),
    onAgentCreated,
    executorBalance,
    scheduleClock,
    apiKeys,
    webhookStore: hooks,
    webhooks,
    storeKind,
    mongoClient,
    async isReady() {
      const [storeReady, chainReady] = await Promise.all([isStoreReady(), isChainReady()]);
      return storeReady && chainReady;
    },
    isStoreReady,
    isChainReady,
    async destroy() {
      executorBalance?.stop();
      await hooks.close();
      await runs.close();
      await store.close();
    },
  };
}

/** Transactions of one GetTokenTransactions page read from the chain at once. */
const TRANSACTION_READS_AT_ONCE = 8;

/** True when the store answers a ping. Never throws. */
async function answers(store: AgentStore): Promise<boolean> {
  try {
    await store.ping();
    return true;
  } catch {
    return false;
  }
}

import type { MongoClient } from "mongodb";
import { type AgentCommands, createAgentCommands } from "./agent/agent-commands.ts";
import { newAgentId } from "./agent/agent-id.ts";
import type { AgentRecord, AgentStore } from "./agent/agent-store.ts";
import { createMemoryAgentStore } from "./agent/memory-agent-store.ts";
import { type AgentCap, createOwnerCaps } from "./agent/owner-caps.ts";
import type { ApiKeyStore } from "./auth/api-key-store.ts";
import { type ApiKeys, createApiKeys } from "./auth/api-keys.ts";
import { createMemoryApiKeyStore } from "./auth/memory-api-key-store.ts";
import type { Chain, TransferChain } from "./chain/chain.ts";
import { createChainApprovals } from "./chain/chain-approvals.ts";
import type { DelegateKeys } from "./chain/delegate-keys.ts";
import type { SigningKey } from "./chain/ed25519-key.ts";
import { createExecutorBalance, type ExecutorBalance } from "./chain/executor-balance.ts";
import { type Config, ConfigError, type MongoConfig, redactUri } from "./config.ts";
import { createAnnouncingAgentStore } from "./events/announcing-agent-store.ts";
import type { EventLog } from "./events/event-log.ts";
import { createMemoryEventLog } from "./events/memory-event-log.ts";
import type { EventRepair } from "./events/mongo-event-repair.ts";
import type { Logger } from "./logger.ts";
import { type ApprovalCheck, createApprovalCheck } from "./scheduler/approval-check.ts";
import { type CheckClaims, createMemoryCheckClaims } from "./scheduler/check-claims.ts";
import type { Executor } from "./scheduler/executor.ts";
import { createExecutorByType } from "./scheduler/executor-by-type.ts";
import { createMemoryRunStore } from "./scheduler/memory-run-store.ts";
import type { RunStore } from "./scheduler/run-store.ts";
import { createScheduleClock, type ScheduleClock } from "./scheduler/schedule-clock.ts";
import { createSimulatedExecutor } from "./scheduler/simulated-executor.ts";
import { createSwapExecutor, type SwapRefusal } from "./scheduler/swap-executor.ts";
import { createTransferExecutor, type TransferHooks } from "./scheduler/transfer-executor.ts";
import { type Catalog, catalogSymbolLookup } from "./token/catalog.ts";
import { createChainTokenSource } from "./token/chain-token-source.ts";
import type { SwapApi } from "./token/jupiter-swap-api.ts";
import { createTokenQueries, type TokenQueries } from "./token/token-queries.ts";
import type { PriceSource, TokenList, TokenSource } from "./token/token-source.ts";
import { createMemoryWebhookStore } from "./webhooks/memory-webhook-store.ts";
import { createWebhookEndpoints, type WebhookEndpoints } from "./webhooks/webhook-endpoints.ts";
import { newEndpointId, newWebhookSecret } from "./webhooks/webhook-secret.ts";
import type { WebhookStore } from "./webhooks/webhook-store.ts";

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
  /** Carries out agent runs: transfers and swaps on the chain, or simulated (TRANSFER_EXECUTOR). */
  readonly executor: Executor;
  /**
   * What a pending agent waits for before the scheduler activates it (a transfer agent: its
   * wallet's approval of its delegate, and the token account that shows it); undefined when runs
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
  readonly mongoClient: MongoClient | undefined;
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
  /** Test hooks around a transfer's first send. */
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
    /** The chain as transfers write to it. */
    readonly transfers: TransferChain;
    /** The service's own key: the fee payer of transfers. */
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
  let store: AgentStore;
  let runStore: RunStore | undefined = overrides.runStore;
  let storeKind: AppContext["storeKind"] = "memory";
  let mongoClient: MongoClient | undefined;
  let apiKeyStore: ApiKeyStore | undefined = overrides.apiKeyStore;
  let events: EventLog | undefined;
  let eventRepair: EventRepair | undefined;
  let webhookStore: WebhookStore | undefined;
  let checkClaims: CheckClaims | undefined;
  if (overrides.agentStore !== undefined) {
    store = overrides.agentStore;
  } else if (config.mongo !== undefined) {
    const mongo = config.mongo;
    // The MongoDB adapters (and the driver, some 30 MB of memory) load only when configured, so
    // the in-memory default does not carry them.
    const [
      { createMongoAgentStore },
      { createMongoRunStore },
      { createMongoApiKeyStore },
      { createMongoEventLog },
      { createMongoEventRepair },
      { createMongoWebhookStore },
      { createMongoCheckClaims },
    ] = await Promise.all([
      import("./agent/mongo-agent-store.ts"),
      import("./scheduler/mongo-run-store.ts"),
      import("./auth/mongo-api-key-store.ts"),
      import("./events/mongo-event-log.ts"),
      import("./events/mongo-event-repair.ts"),
      import("./webhooks/mongo-webhook-store.ts"),
      import("./scheduler/mongo-check-claims.ts"),
    ]);
    // The driver parses the URI when the client is made (no connection yet); what it rejects is a
    // configuration error, reported like the others and without the driver's text (it may quote
    // the URI, password included).
    const mongoStore = await createMongoAgentStore({
      ...mongoStoreOptions(mongo),
      ...(overrides.now === undefined ? {} : { now: overrides.now }),
    }).catch(() => {
      throw new ConfigError("invalid configuration: MONGODB_URI is not a valid MongoDB connection string");
    });
    store = mongoStore;
    runStore ??= createMongoRunStore({
      db: mongoStore.db,
      guard: mongoStore.guard,
      maxTimeMS: mongo.operationTimeoutMs,
    });
    apiKeyStore ??= createMongoApiKeyStore({
      db: mongoStore.db,
      guard: mongoStore.guard,
      maxTimeMS: mongo.operationTimeoutMs,
    });
    checkClaims = createMongoCheckClaims({ db: mongoStore.db, guard: mongoStore.guard });
    events = createMongoEventLog({ db: mongoStore.db, guard: mongoStore.guard });
    eventRepair = createMongoEventRepair({ db: mongoStore.db, log: events, guard: mongoStore.guard });
    webhookStore = createMongoWebhookStore({
      db: mongoStore.db,
      guard: mongoStore.guard,
      maxTimeMS: mongo.operationTimeoutMs,
    });
    mongoClient = mongoStore.client;
    storeKind = "mongodb";
    logger.info({ mongodb: redactUri(mongo.uri), db: mongo.dbName }, "agents are stored in MongoDB");
  } else {
    store = createMemoryAgentStore(overrides.now === undefined ? {} : { now: overrides.now });
    logger.warn("agents are kept in memory and are not persisted; set MONGODB_URI to keep them");
  }
  const runs = runStore ?? createMemoryRunStore();
  const eventLog = events ?? createMemoryEventLog();
  // Every writer of agents goes through this store, so every change is announced.
  store = createAnnouncingAgentStore({
    store,
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
  const hooks = webhookStore ?? createMemoryWebhookStore();
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
  const mints = new Map(catalog.tokens.map((t) => [t.symbol, t.mint]));
  const mintOf = (symbol: string) => mints.get(symbol);
  const simulated = createSimulatedExecutor({
    tokens: prices,
    mintOf,
    faults: {
      failureRate: config.scheduler.simulatedFailureRate,
      hangRate: config.scheduler.simulatedHangRate,
      latencyMs: config.scheduler.simulatedLatencyMs,
    },
  });
  const realTransfers = config.transfers.executor === "chain";
  const executorBalance = realTransfers
    ? createExecutorBalance({
        address: executorKey.address,
        read: (signal) => chain.getBalance(executorKey.address, signal),
        minLamports: BigInt(config.transfers.executorMinLamports),
        intervalMs: EXECUTOR_BALANCE_INTERVAL_MS,
        timeoutMs: config.solana.timeoutMs,
        onChange(problem, lamports) {
          if (problem !== undefined) logger.warn({ executor: executorKey.address, lamports }, problem);
          else logger.info({ executor: executorKey.address, lamports }, "the executor can pay fees again");
        },
      })
    : undefined;
  const executor =
    overrides.executor ??
    createExecutorByType({
      transfer:
        executorBalance !== undefined
          ? afterEachRun(
              createTransferExecutor({
                chain,
                transfers,
                executor: executorKey,
                delegates,
                mintOf,
                prices,
                caps: { perRunUsd: config.transfers.maxUsdPerRun, perDayUsd: config.transfers.maxUsdPerDay },
                maxAccountCreationsPerDay: config.transfers.maxAccountCreationsPerDay,
                ...(parts.onRentSpent === undefined ? {} : { onRentSpent: parts.onRentSpent }),
                ...(overrides.transferHooks === undefined ? {} : { hooks: overrides.transferHooks }),
              }),
              // Every run spends the executor's lamports: read them again (throttled) after it.
              () => executorBalance.refreshSoon(),
            )
          : simulated,
      swap:
        executorBalance !== undefined
          ? afterEachRun(
              createSwapExecutor({
                chain,
                transfers,
                swaps: parts.swaps,
                executor: executorKey,
                delegates,
                mintOf,
                allowedPrograms: config.swaps.allowedPrograms,
                maxFeeLamports: config.swaps.maxFeeLamports,
                maxPriceDeviationBps: config.swaps.maxPriceDeviationBps,
                prices,
                caps: { perRunUsd: config.transfers.maxUsdPerRun, perDayUsd: config.transfers.maxUsdPerDay },
                ...(parts.onSwapRefused === undefined ? {} : { onRefused: parts.onSwapRefused }),
                ...(overrides.transferHooks === undefined ? {} : { hooks: overrides.transferHooks }),
              }),
              () => executorBalance.refreshSoon(),
            )
          : simulated,
    });
  const tokens = createTokenQueries({ prices, tokenList, source: tokenSource });
  const canonicalSymbol = catalogSymbolLookup(catalog);
  const decimals = new Map(catalog.tokens.map((t) => [t.symbol, t.decimals]));
  const createdListeners = new Set<(agent: AgentRecord) => void>();
  const agents = createAgentCommands({
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
      required: realTransfers,
      mintOf,
    }),
    onCreated: (agent) => {
      for (const listener of createdListeners) listener(agent);
    },
    caps: createOwnerCaps({
      store,
      defaults: config.agentCaps,
      ...(parts.onAgentCapReached === undefined ? {} : { onRefused: parts.onAgentCapReached }),
    }),
    newId: newAgentId,
    ...(overrides.now === undefined ? {} : { now: overrides.now }),
    ...(parts.swapNotice === undefined ? {} : { swapNotice: parts.swapNotice }),
  });
  const isStoreReady = async () => {
    try {
      await store.ping();
      return true;
    } catch {
      return false;
    }
  };
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
    executor,
    awaitReady: realTransfers ? createApprovalCheck({ chain, transfers, delegates, mintOf }) : undefined,
    checkClaims: checkClaims ?? createMemoryCheckClaims(),
    onAgentCreated: (listener) => createdListeners.add(listener),
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

/** How often the executor's balance is read besides after runs: a getBalance, cheap for any cluster. */
const EXECUTOR_BALANCE_INTERVAL_MS = 30_000;

/** `executor`, telling `after` once each run is over, whatever its outcome. */
function afterEachRun(executor: Executor, after: () => void): Executor {
  return {
    async execute(execution) {
      try {
        return await executor.execute(execution);
      } finally {
        after();
      }
    },
    ...(executor.upstreamOf === undefined ? {} : { upstreamOf: (agent) => executor.upstreamOf?.(agent) }),
  };
}

/** Transactions of one GetTokenTransactions page read from the chain at once. */
const TRANSACTION_READS_AT_ONCE = 8;

/** The MongoDB store's options from the configuration, for the server and the keys command alike. */
export function mongoStoreOptions(mongo: MongoConfig) {
  return {
    uri: mongo.uri,
    ...(mongo.dbName === undefined ? {} : { dbName: mongo.dbName }),
    maxPoolSize: mongo.maxPoolSize,
    serverSelectionTimeoutMS: mongo.serverSelectionTimeoutMs,
    connectTimeoutMS: mongo.connectTimeoutMs,
    socketTimeoutMS: mongo.socketTimeoutMs,
    operationTimeoutMS: mongo.operationTimeoutMs,
    // Feeds mongodb_commands_total (what the stores cost the database).
    monitorCommands: true,
  };
}

/**
 * Says at startup how calls will be let in, and what to do when no key exists to call with: keys
 * are required by default with MONGODB_URI, SOLANA_RPC_URL or NODE_ENV=production (the
 * container), and a first `docker run` or `MONGODB_URI=… npm start` otherwise answers every call
 * with 401 and no clue why. With MongoDB the keys may already exist (`npm run keys`), so that
 * warning waits for the store to say it holds none; a database still down says nothing here.
 */
function warnOfKeys(
  config: Config,
  storeKind: "memory" | "mongodb",
  keys: ApiKeyStore | undefined,
  logger: Logger,
): void {
  if (config.auth.mode === "none") {
    logger.warn("AUTH_MODE=none: calls need no API key, every caller is anonymous and sees every agent");
    return;
  }
  if (config.auth.adminKey !== undefined) return;
  const required =
    "API keys are required (AUTH_MODE=apikey, the default with MONGODB_URI, SOLANA_RPC_URL or NODE_ENV=production as in the container)";
  if (storeKind === "memory" || keys === undefined) {
    logger.warn(
      `${required} and keys live in memory, where none exists yet: every call is refused with 401. Start with ADMIN_API_KEY set to 32 or more random characters (docker run -e ADMIN_API_KEY=…) and make keys with POST /v1/apikeys, or set AUTH_MODE=none to try it without keys`,
    );
    return;
  }
  keys.list({ limit: 1, offset: 0 }).then(
    (page) => {
      if (page.total > 0) return;
      logger.warn(
        `${required} and the database holds none yet: every call is refused with 401. Make one with npm run keys -- create --owner NAME (in the container: node scripts/keys.ts create --owner NAME), or start with ADMIN_API_KEY set to 32 or more random characters`,
      );
    },
    () => {},
  );
}

import type { MongoClient } from "mongodb";
import { type AgentCommands, createAgentCommands } from "./agent/agent-commands.ts";
import { newAgentId } from "./agent/agent-id.ts";
import type { AgentStore } from "./agent/agent-store.ts";
import { createMemoryAgentStore } from "./agent/memory-agent-store.ts";
import type { ApiKeyStore } from "./auth/api-key-store.ts";
import { type ApiKeys, createApiKeys } from "./auth/api-keys.ts";
import { createMemoryApiKeyStore } from "./auth/memory-api-key-store.ts";
import { type Config, ConfigError, type MongoConfig, redactUri } from "./config.ts";
import type { Logger } from "./logger.ts";
import type { Executor } from "./scheduler/executor.ts";
import { createMemoryRunStore } from "./scheduler/memory-run-store.ts";
import type { RunStore } from "./scheduler/run-store.ts";
import { createScheduleClock, type ScheduleClock } from "./scheduler/schedule-clock.ts";
import { createSimulatedExecutor } from "./scheduler/simulated-executor.ts";
import { createCatalogTokenSource } from "./token/catalog-token-source.ts";
import { createTokenQueries, type TokenQueries } from "./token/token-queries.ts";
import type { TokenSource } from "./token/token-source.ts";

/**
 * Everything the service needs at run time, built once from the configuration. It owns the
 * resources (the MongoDB client) and releases them in `destroy()`. Tests override parts.
 */
export interface AppContext {
  readonly config: Config;
  readonly logger: Logger;
  readonly tokenSource: TokenSource;
  readonly tokens: TokenQueries;
  readonly agentStore: AgentStore;
  readonly agents: AgentCommands;
  /** Slot leases and run history, beside the agents (same database, or memory). */
  readonly runStore: RunStore;
  /** Carries out agent runs (simulated on the catalog today). */
  readonly executor: Executor;
  /** Schedule time (SCHEDULE_TIME_SCALE). */
  readonly scheduleClock: ScheduleClock;
  /** API keys: verification for the auth interceptor, management for ApiKeyService. */
  readonly apiKeys: ApiKeys;
  /** "mongodb" or "memory": which agent store serves. */
  readonly storeKind: "mongodb" | "memory";
  /** The agent store's MongoDB client, for its connection pool metrics; undefined otherwise. */
  readonly mongoClient: MongoClient | undefined;
  /** True when every dependency can serve (readiness). Never throws. */
  isReady(): Promise<boolean>;
  destroy(): Promise<void>;
}

export interface AppContextOverrides {
  readonly tokenSource?: TokenSource;
  readonly agentStore?: AgentStore;
  readonly runStore?: RunStore;
  readonly executor?: Executor;
  readonly apiKeyStore?: ApiKeyStore;
  readonly now?: () => Date;
}

export async function createAppContext(
  config: Config,
  logger: Logger,
  overrides: AppContextOverrides = {},
): Promise<AppContext> {
  const tokenSource = overrides.tokenSource ?? createCatalogTokenSource();
  let store: AgentStore;
  let runStore: RunStore | undefined = overrides.runStore;
  let storeKind: AppContext["storeKind"] = "memory";
  let mongoClient: MongoClient | undefined;
  let apiKeyStore: ApiKeyStore | undefined = overrides.apiKeyStore;
  if (overrides.agentStore !== undefined) {
    store = overrides.agentStore;
  } else if (config.mongo !== undefined) {
    const mongo = config.mongo;
    // The MongoDB adapters (and the driver, some 30 MB of memory) load only when configured, so
    // the in-memory default does not carry them.
    const [{ createMongoAgentStore }, { createMongoRunStore }, { createMongoApiKeyStore }] =
      await Promise.all([
        import("./agent/mongo-agent-store.ts"),
        import("./scheduler/mongo-run-store.ts"),
        import("./auth/mongo-api-key-store.ts"),
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
    mongoClient = mongoStore.client;
    storeKind = "mongodb";
    logger.info({ mongodb: redactUri(mongo.uri), db: mongo.dbName }, "agents are stored in MongoDB");
  } else {
    store = createMemoryAgentStore(overrides.now === undefined ? {} : { now: overrides.now });
    logger.warn("agents are kept in memory and are not persisted; set MONGODB_URI to keep them");
  }
  const runs = runStore ?? createMemoryRunStore();
  const apiKeys = createApiKeys({
    store: apiKeyStore ?? createMemoryApiKeyStore(),
    adminKey: config.auth.adminKey,
    ...(overrides.now === undefined ? {} : { now: overrides.now }),
  });
  if (config.auth.mode === "none") {
    logger.warn("AUTH_MODE=none: calls need no API key, every caller is anonymous and sees every agent");
  } else if (storeKind === "memory" && config.auth.adminKey === undefined) {
    logger.warn("AUTH_MODE=apikey with keys in memory and no ADMIN_API_KEY: no key exists to call with");
  }
  const scheduleClock = createScheduleClock({ scale: config.scheduler.timeScale });
  const executor =
    overrides.executor ??
    createSimulatedExecutor({
      tokens: tokenSource,
      faults: {
        failureRate: config.scheduler.simulatedFailureRate,
        hangRate: config.scheduler.simulatedHangRate,
        latencyMs: config.scheduler.simulatedLatencyMs,
      },
    });
  const tokens = createTokenQueries({ source: tokenSource });
  const agents = createAgentCommands({
    store,
    runs,
    clock: scheduleClock,
    lookupSymbol: (symbol) => tokenSource.canonicalSymbol(symbol),
    async lookupDecimals(symbol) {
      const entry = (await tokenSource.listPrices()).find((p) => p.symbol === symbol);
      return entry === undefined ? undefined : (await tokenSource.getMetadata(entry.mint))?.decimals;
    },
    newId: newAgentId,
    ...(overrides.now === undefined ? {} : { now: overrides.now }),
  });
  return {
    config,
    logger,
    tokenSource,
    tokens,
    agentStore: store,
    agents,
    runStore: runs,
    executor,
    scheduleClock,
    apiKeys,
    storeKind,
    mongoClient,
    async isReady() {
      try {
        await store.ping();
        return true;
      } catch {
        return false;
      }
    },
    async destroy() {
      await runs.close();
      await store.close();
    },
  };
}

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
  };
}

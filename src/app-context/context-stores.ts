/**
 * The stores of the context: the agent store, run history, API keys, the event log and its repair,
 * webhooks and check claims, all on one MongoDB (MONGODB_URI) or, without it, the agent store in
 * memory (the others then default to memory where the context is built). Tests override parts.
 */
import type { AgentStore } from "../agent/agent-store.ts";
import { createMemoryAgentStore } from "../agent/memory-agent-store.ts";
import type { MongoAgentStore } from "../agent/mongo-agent-store.ts";
import type { ApiKeyStore } from "../auth/api-key-store.ts";
import { type Config, ConfigError, type MongoConfig, redactUri } from "../config.ts";
import type { EventLog } from "../events/event-log.ts";
import type { EventRepair } from "../events/mongo-event-repair.ts";
import type { Logger } from "../logger.ts";
import type { CheckClaims } from "../scheduler/check-claims.ts";
import type { RunStore } from "../scheduler/run-store.ts";
import type { WebhookStore } from "../webhooks/webhook-store.ts";

export interface ContextStoresOverrides {
  readonly agentStore?: AgentStore;
  readonly runStore?: RunStore;
  readonly apiKeyStore?: ApiKeyStore;
  readonly now?: () => Date;
}

export interface ContextStores {
  /** The agent store, before the context wraps it to announce every change. */
  readonly store: AgentStore;
  readonly runStore: RunStore | undefined;
  readonly storeKind: "mongodb" | "memory";
  /** The agent store's MongoDB client, for its connection pool metrics. */
  readonly mongoClient: MongoAgentStore["client"] | undefined;
  readonly apiKeyStore: ApiKeyStore | undefined;
  readonly events: EventLog | undefined;
  readonly eventRepair: EventRepair | undefined;
  readonly webhookStore: WebhookStore | undefined;
  readonly checkClaims: CheckClaims | undefined;
}

export async function createContextStores(
  config: Config,
  logger: Logger,
  overrides: ContextStoresOverrides,
): Promise<ContextStores> {
  let store: AgentStore;
  let runStore: RunStore | undefined = overrides.runStore;
  let storeKind: ContextStores["storeKind"] = "memory";
  let mongoClient: MongoAgentStore["client"] | undefined;
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
      import("../agent/mongo-agent-store.ts"),
      import("../scheduler/mongo-run-store.ts"),
      import("../auth/mongo-api-key-store.ts"),
      import("../events/mongo-event-log.ts"),
      import("../events/mongo-event-repair.ts"),
      import("../webhooks/mongo-webhook-store.ts"),
      import("../scheduler/mongo-check-claims.ts"),
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
  return {
    store,
    runStore,
    storeKind,
    mongoClient,
    apiKeyStore,
    events,
    eventRepair,
    webhookStore,
    checkClaims,
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
    // Feeds mongodb_commands_total (what the stores cost the database).
    monitorCommands: true,
  };
}

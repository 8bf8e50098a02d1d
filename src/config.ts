/**
 * Configuration: the environment read once into a typed, validated object that is passed down.
 * A bad value stops startup with one message naming every offending variable, so an operator
 * fixes all of them in one go instead of meeting them one restart at a time.
 */
import { type AuthConfig, readAuth } from "./config/auth-config.ts";
import { ConfigError } from "./config/config-error.ts";
import { createConfigReader, type Env } from "./config/config-reader.ts";
import { type MongoConfig, readMongo } from "./config/mongo-config.ts";
import { type PricesConfig, readPrices } from "./config/prices-config.ts";
import { readScheduler, type SchedulerConfig } from "./config/scheduler-config.ts";
import { readServer, type ServerConfig } from "./config/server-config.ts";
import { readSolana, type SolanaConfig } from "./config/solana-config.ts";
import { readStreams, type StreamsConfig } from "./config/streams-config.ts";
import { readSwaps, type SwapsConfig } from "./config/swaps-config.ts";
import { readTransfers, type TransferConfig } from "./config/transfer-config.ts";
import { readTriggers, type TriggersConfig } from "./config/triggers-config.ts";
import { readWebhooks, type WebhooksConfig } from "./config/webhooks-config.ts";

export type { AuthConfig, RateLimitConfig } from "./config/auth-config.ts";
export { ConfigError } from "./config/config-error.ts";
export { redactRpcUrl, redactUri } from "./config/config-urls.ts";
export { CONFIG_VARIABLES } from "./config/config-variables.ts";
export type { MongoConfig } from "./config/mongo-config.ts";
export type { PricesConfig } from "./config/prices-config.ts";
export type { SchedulerConfig } from "./config/scheduler-config.ts";
export { type HttpLimits, LOG_LEVELS, type LogLevel } from "./config/server-config.ts";
export {
  DEFAULT_LOCAL_CHAIN_PORT_LIMITS,
  DEFAULT_LOCAL_CHAIN_PUBSUB_LIMITS,
  type LocalChainConfig,
  type LocalChainPortLimits,
  type LocalChainPubSubLimits,
  pubsubAddressShare,
  SOLANA_COMMITMENTS,
  type SolanaCommitment,
  type SolanaConfig,
} from "./config/solana-config.ts";
export type { StreamsConfig } from "./config/streams-config.ts";
export { DEFAULT_SWAP_PROGRAMS, JUPITER_SWAP_DEFAULT_URL, type SwapsConfig } from "./config/swaps-config.ts";
export type { TransferConfig } from "./config/transfer-config.ts";
export type { TriggerPriceSourceName } from "./config/triggers-config.ts";
export type { WebhooksConfig } from "./config/webhooks-config.ts";

/** The whole configuration: the server's own settings (server-config.ts), and each area's. */
export interface Config extends ServerConfig {
  readonly scheduler: SchedulerConfig;
  readonly auth: AuthConfig;
  /** Undefined: agents live in the in-process store (not persisted). */
  readonly mongo: MongoConfig | undefined;
  readonly solana: SolanaConfig;
  readonly transfers: TransferConfig;
  readonly prices: PricesConfig;
  readonly swaps: SwapsConfig;
  readonly triggers: TriggersConfig;
  readonly streams: StreamsConfig;
  readonly webhooks: WebhooksConfig;
  /** Caps per owner on CreateAgent (an admin may set others on a key). */
  readonly agentCaps: { readonly maxAgents: number; readonly maxPending: number };
}

/** Reads and validates the configuration; throws ConfigError naming each bad variable. */
export function loadConfig(env: Env = process.env): Config {
  const reader = createConfigReader(env);
  const { bool, int, problems } = reader;
  const { http, ...server } = readServer(reader);
  const scheduler = readScheduler(reader);
  if (http.requestTimeoutMs < http.headersTimeoutMs) {
    // Node's HTTP/1.1 server refuses this combination; say so in our words.
    problems.push(
      `REQUEST_TIMEOUT_MS must be at least HEADERS_TIMEOUT_MS (got ${http.requestTimeoutMs} and ${http.headersTimeoutMs})`,
    );
  }
  const mongo = readMongo(reader);
  const production = (env.NODE_ENV ?? "").trim().toLowerCase() === "production";
  const auth = readAuth(reader, { persistent: mongo !== undefined, production });
  const solana = readSolana(reader, production);
  const transfers = readTransfers(reader, solana);
  if (
    auth.mode === "none" &&
    solana.rpcUrl !== undefined &&
    transfers.executor === "chain" &&
    !bool("ALLOW_ANONYMOUS_TRANSFERS")
  ) {
    // Without keys every caller is one owner, "anonymous": every caller could create an agent on
    // any wallet that approved anonymous's delegate, and spend that approval.
    problems.push(
      "AUTH_MODE=none with SOLANA_RPC_URL moves real tokens for any caller: use AUTH_MODE=apikey, or set ALLOW_ANONYMOUS_TRANSFERS=true to accept that every caller shares one owner and its approvals",
    );
  }
  const prices = readPrices(reader);
  const swaps = readSwaps(reader);
  const triggers = readTriggers(reader, prices);
  const streams = readStreams(reader, http);
  const webhooks = readWebhooks(reader);

  const agentCaps = {
    maxAgents: int("MAX_AGENTS_PER_OWNER", 1, 10_000_000),
    maxPending: int("MAX_PENDING_PER_OWNER", 1, 10_000_000),
  };

  if (problems.length > 0) {
    throw new ConfigError(`invalid configuration: ${problems.join("; ")}`);
  }
  return {
    ...server,
    http,
    scheduler,
    auth,
    mongo,
    solana,
    transfers,
    prices,
    swaps,
    triggers,
    streams,
    webhooks,
    agentCaps,
  };
}

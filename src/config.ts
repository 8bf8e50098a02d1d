/**
 * Configuration: the environment read once into a typed, validated object that is passed down.
 * A bad value stops startup with one message naming every offending variable, so an operator
 * fixes all of them in one go instead of meeting them one restart at a time.
 */
import { isAddress } from "@solana/addresses";

export const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export interface MongoConfig {
  readonly uri: string;
  /** Database name; undefined means the one in the URI, else the project default. */
  readonly dbName: string | undefined;
  readonly maxPoolSize: number;
  readonly serverSelectionTimeoutMs: number;
  readonly connectTimeoutMs: number;
  readonly socketTimeoutMs: number;
  /** Bound on one store call, retries and reconnects included. */
  readonly operationTimeoutMs: number;
}

/** Bounds on what one client can hold of the server: connections, streams, and slow requests. */
export interface HttpLimits {
  /** Open connections accepted at once; more are closed on arrival. Keep it below `ulimit -n`. */
  readonly maxConnections: number;
  /** Streams one HTTP/2 connection may have open at once (advertised in SETTINGS). */
  readonly maxConcurrentStreams: number;
  /** Time a client has to send a request's headers. */
  readonly headersTimeoutMs: number;
  /** Time a client has to send a whole request, body included (client-streaming calls excepted). */
  readonly requestTimeoutMs: number;
  /** A connection with nothing in flight is closed after this long. */
  readonly idleTimeoutMs: number;
}

/** The scheduler that activates and runs agents (see src/scheduler/scheduler.ts). */
export interface SchedulerConfig {
  readonly enabled: boolean;
  /** Slots one replica runs at once. */
  readonly concurrency: number;
  readonly pollIntervalMs: number;
  readonly leaseMs: number;
  readonly attemptTimeoutMs: number;
  readonly maxAttempts: number;
  readonly retryBaseMs: number;
  readonly retryMaxMs: number;
  readonly maxConsecutiveFailures: number;
  /**
   * Token accounts of pending agents watched with accountSubscribe (PENDING_WATCH_MAX_ACCOUNTS), so
   * an approval activates its agent as it lands; 0: none, the poll alone activates.
   */
  readonly pendingWatchMaxAccounts: number;
  /** Schedule milliseconds per real millisecond (1: real time). */
  readonly timeScale: number;
  /** The simulated executor's faults, for demos and tests: shares of attempts that fail or hang. */
  readonly simulatedFailureRate: number;
  readonly simulatedHangRate: number;
  readonly simulatedLatencyMs: number;
}

/** A token bucket: `rate` calls a second, bursts of up to `burst`. */
export interface RateLimitConfig {
  readonly rate: number;
  readonly burst: number;
}

export interface AuthConfig {
  /** "apikey": calls need `authorization: Bearer <key>`; "none": every caller is "anonymous". */
  readonly mode: "apikey" | "none";
  /** ADMIN_API_KEY: a bootstrap key with every scope (owner "admin"); never logged. */
  readonly adminKey: string | undefined;
  /** TokenService answers callers without a key (limited per address). */
  readonly publicTokenReads: boolean;
  /** Server reflection answers callers without a key. */
  readonly publicReflection: boolean;
  /** Per key: calls that change nothing, and the others. */
  readonly read: RateLimitConfig;
  readonly write: RateLimitConfig;
  /** Per client address: calls without a valid key (failed attempts, public token reads). */
  readonly anonymous: RateLimitConfig;
}

/** Which chain the token data comes from, and how its JSON-RPC is called. */
export interface SolanaConfig {
  /** SOLANA_RPC_URL: a cluster's JSON-RPC endpoint; undefined runs the embedded local chain. */
  readonly rpcUrl: string | undefined;
  /**
   * SOLANA_WS_URL: the cluster's PubSub (WebSocket) endpoint, where pending agents' token accounts
   * are watched; undefined: the embedded chain's own PubSub port, and none with SOLANA_RPC_URL.
   */
  readonly wsUrl: string | undefined;
  /** Commitment of every read: processed, confirmed or finalized. */
  readonly commitment: SolanaCommitment;
  /** Bound on one JSON-RPC request (one attempt), in milliseconds. */
  readonly timeoutMs: number;
  /** JSON-RPC requests in flight at once; more wait, up to `maxQueued`, then fail fast. */
  readonly maxConcurrency: number;
  readonly maxQueued: number;
  /** Retries of a request the cluster refused for now (429, 5xx, connection lost), with backoff. */
  readonly maxRetries: number;
  readonly retryBaseMs: number;
  /** Longest a request waits on a 429's Retry-After; a longer wait fails at once as unavailable. */
  readonly maxRetryWaitMs: number;
  /** Largest JSON-RPC answer read, in bytes; a larger one is refused as a bad answer. */
  readonly maxResponseBytes: number;
  /** Landed transactions kept in memory by signature (0: none; each page is read anew). */
  readonly transactionCache: number;
  /** The embedded local chain (used when `rpcUrl` is undefined, and by `npm run local-chain`). */
  readonly local: LocalChainConfig;
}

export const SOLANA_COMMITMENTS = ["processed", "confirmed", "finalized"] as const;
export type SolanaCommitment = (typeof SOLANA_COMMITMENTS)[number];

export interface LocalChainConfig {
  /** Port of its JSON-RPC on 127.0.0.1 (0: any free port). */
  readonly port: number;
  /** File its state is kept in across restarts; undefined: a fresh chain on every start. */
  readonly statePath: string | undefined;
  /** Length of a slot in milliseconds (Solana's target is 400). */
  readonly slotMs: number;
  /** Bounds on what one client can hold of the port (it shares the service's process and memory). */
  readonly limits: LocalChainPortLimits;
  /**
   * Transactions its ledger keeps for getTransaction and getSignaturesForAddress (about 2 KB of
   * memory each); older ones are forgotten, as a validator's RPC forgets history.
   */
  readonly history: number;
  /** requestAirdrop per client address: its faucet is not a way to grow the ledger without end. */
  readonly airdropLimit: RateLimitConfig;
  /**
   * surfpool's cheatcodes (surfnet_setAccount, surfnet_setTokenAccount) are served: they rewrite
   * any account, so they are off under NODE_ENV=production unless asked for.
   */
  readonly cheatcodes: boolean;
  /**
   * Host header values the port answers besides localhost, 127.0.0.1 and [::1]: a web page that
   * rebinds its own name to 127.0.0.1 sends that name, and is refused.
   */
  readonly allowedHosts: readonly string[];
  /** Bounds on its PubSub (WebSocket) port, on its RPC port + 1. */
  readonly pubsub: LocalChainPubSubLimits;
}

export interface LocalChainPubSubLimits {
  /** Open WebSocket connections; more are refused with 503 before the upgrade. */
  readonly maxConnections: number;
  /** Subscriptions one connection may hold; more are refused with -32603. */
  readonly maxSubscriptionsPerConnection: number;
  /**
   * Subscriptions all connections together may hold; more are refused as Agave refuses past its
   * own cap (LOCAL_SOLANA_PUBSUB_MAX_SUBSCRIPTIONS; absent: its default).
   */
  readonly maxSubscriptions?: number;
  /**
   * Subscriptions the connections of one remote address together may hold, so that one client
   * cannot take the whole node's cap (LOCAL_SOLANA_PUBSUB_MAX_SUBSCRIPTIONS_PER_ADDRESS; absent:
   * a quarter of maxSubscriptions). The service's own watch is outside both.
   */
  readonly maxSubscriptionsPerAddress?: number;
  /** Largest message a client may send; a larger one closes its connection (1009). */
  readonly maxMessageBytes: number;
  /** Bytes written to one client that it has not taken yet; past them the client is cut off. */
  readonly maxBufferedBytes: number;
}

export interface LocalChainPortLimits {
  /** Bytes of one answer, a request's or a whole batch's; past it the request answers -32012. */
  readonly maxAnswerBytes: number;
  /** Time one request, or a whole batch, may run on the chain's thread; past it the rest answers -32012. */
  readonly maxRequestMs: number;
  /** Time an answer may take to be written out to a client that does not read; then it is cut off. */
  readonly writeTimeoutMs: number;
  /** Open connections; more are closed on arrival. */
  readonly maxConnections: number;
  /** Requests one connection may have unanswered at once (HTTP/1.1 pipelining); more get 429. */
  readonly maxInFlightPerConnection: number;
  /**
   * Bytes of answers written but not yet taken by their clients, over all connections: what the
   * bounds above allow at once (connections × requests in flight × answer) is far more than the
   * process can hold, so past this new requests get 503 until clients read.
   */
  readonly maxUnsentBytes: number;
}

export interface Config {
  readonly host: string;
  readonly port: number;
  readonly logLevel: LogLevel;
  /** Log bytes held while stdout does not keep up; lines past it are dropped and counted. */
  readonly logBufferBytes: number;
  /** Origins allowed to call from a browser; ["*"] allows any. Empty: no CORS headers at all. */
  readonly corsOrigins: readonly string[];
  /** Largest request message accepted, in bytes. */
  readonly maxRequestBytes: number;
  /**
   * Serve unary calls on the lean path (src/lean/); false sends every call through connect-node's
   * handlers, a switch for ruling the lean path in or out when a call misbehaves.
   */
  readonly leanUnary: boolean;
  /** How long calls in flight may take to finish after SIGTERM before connections are cut. */
  readonly shutdownTimeoutMs: number;
  readonly http: HttpLimits;
  readonly scheduler: SchedulerConfig;
  readonly auth: AuthConfig;
  /** Undefined: agents live in the in-process store (not persisted). */
  readonly mongo: MongoConfig | undefined;
  readonly solana: SolanaConfig;
  readonly transfers: TransferConfig;
  readonly prices: PricesConfig;
  readonly swaps: SwapsConfig;
  readonly streams: StreamsConfig;
  readonly webhooks: WebhooksConfig;
  /** Caps per owner on CreateAgent (an admin may set others on a key). */
  readonly agentCaps: { readonly maxAgents: number; readonly maxPending: number };
}

/** Webhook deliveries of agent events (WebhookService). */
export interface WebhooksConfig {
  /** Whether this process delivers (every replica may; leases keep each attempt to one). */
  readonly enabled: boolean;
  /** http:// endpoint URLs are accepted (for development); otherwise https only. */
  readonly allowHttp: boolean;
  /** Deliveries may go to private, loopback and link-local addresses (tests, private deployments). */
  readonly allowPrivateNetworks: boolean;
  readonly maxEndpointsPerOwner: number;
  /** Each attempt's bound, from connecting to the last byte of the answer read. */
  readonly timeoutMs: number;
  /**
   * The bound on connecting (resolving, TCP, TLS) within `timeoutMs`: a host that does not take
   * the connection frees its place soon, while an endpoint that is slow to answer keeps the rest.
   */
  readonly connectTimeoutMs: number;
  /** Attempts in flight in this process, and to one endpoint from this process. */
  readonly concurrency: number;
  readonly maxInFlightPerEndpoint: number;
  /** Attempts in flight for one owner's endpoints from this process: one owner cannot take every place. */
  readonly maxInFlightPerOwner: number;
  /** How often this process looks for new events and for due deliveries. */
  readonly pollIntervalMs: number;
  /** The first retry's delay; each later one doubles, up to `retryMaxMs`, with ±20% jitter. */
  readonly retryBaseMs: number;
  readonly retryMaxMs: number;
  /** How long a delivery is retried, from its event (or its resend). */
  readonly retryForMs: number;
  /** An endpoint whose deliveries all failed for this long is disabled. */
  readonly disableAfterMs: number;
  /** How long the secret before a rotation keeps signing beside the new one. */
  readonly secretOverlapMs: number;
  /** Finished deliveries are kept this long for ListWebhookDeliveries. */
  readonly deliveryRetentionMs: number;
}

/** Server streams (WatchTokenPrices, WatchAgentEvents). */
export interface StreamsConfig {
  /** A heartbeat message after this long without one, so proxies keep idle streams open. */
  readonly heartbeatMs: number;
  /** Streams one caller (API key, or address without one) may hold at once. */
  readonly maxPerKey: number;
  /** Messages a stream may have waiting for its reader; past it the stream ends (resource_exhausted). */
  readonly bufferMessages: number;
  /**
   * A stream whose connection took none of what was written for this long is ended: its reader
   * stopped reading (or vanished without a word), and would hold its slot and its watch for good.
   */
  readonly writeTimeoutMs: number;
  /** How often each process reads the event log for new events (one read for all its watchers). */
  readonly eventPollIntervalMs: number;
  /** Agent events older than this are dropped; a cursor older than that is out_of_range. */
  readonly eventRetentionMs: number;
  /**
   * How often each replica looks for changes of the last `eventRepairWindowMs` whose event is
   * missing (default a minute: each sweep reads four collections by time, which FerretDB answers
   * by decoding every document of each).
   */
  readonly eventRepairIntervalMs: number;
  readonly eventRepairWindowMs: number;
}

/** Where prices and the token list come from, and how long a price may be served. */
export interface PricesConfig {
  /** JUPITER_API_URL: Jupiter's base URL (Price API v3, Tokens API v2); undefined: the catalog. */
  readonly jupiterUrl: string | undefined;
  /** Sent as `x-api-key`; never logged. */
  readonly jupiterApiKey: string | undefined;
  /** Mints listed when GetTokenPrices has no filter; undefined: the catalog's tokens. */
  readonly watchlist: readonly string[] | undefined;
  /** A price is fresh this long; after it, it is served while one request revalidates it. */
  readonly ttlMs: number;
  /** Oldest price served while the source fails; past it, callers get unavailable. */
  readonly maxStaleMs: number;
  /** The token list (names, symbols, logos, tags) is refreshed this often, in the background. */
  readonly tokenListTtlMs: number;
  /** Bound on one Jupiter request, answer included. */
  readonly timeoutMs: number;
  /** Jupiter requests in flight at once; more wait, up to `maxQueued`, then fail fast. */
  readonly maxConcurrency: number;
  readonly maxQueued: number;
  /** Largest Price API or token search answer read, in bytes. */
  readonly maxResponseBytes: number;
  /** Largest verified token list read, in bytes (it holds thousands of tokens). */
  readonly maxTokenListBytes: number;
  /** Mints whose prices (and token list entries) are kept in memory. */
  readonly cacheEntries: number;
  /** Consecutive failed Jupiter calls that open its circuit, and how long it stays open. */
  readonly breakerFailures: number;
  readonly breakerOpenMs: number;
  /** The catalog's prices take a random-walk step this often (0: they stay the snapshot's). */
  readonly catalogTickMs: number;
  /** One poll of the price source per this interval serves every price watcher of the process. */
  readonly watchIntervalMs: number;
}

/** Where swap agents' routes come from, and what a route may touch before it is signed. */
export interface SwapsConfig {
  /** JUPITER_SWAP_URL: Jupiter's Swap API v2 base (GET {url}/build). */
  readonly jupiterSwapUrl: string;
  /**
   * JUPITER_SWAP_URL unset on the embedded chain (no SOLANA_RPC_URL): routes come from the local
   * pools on that development chain, in-process, not from Jupiter. Never against a cluster.
   */
  readonly localRoutes?: boolean;
  /** Bound on one build request, answer included. */
  readonly timeoutMs: number;
  /** Largest build answer read, in bytes. */
  readonly maxResponseBytes: number;
  /** Build requests in flight at once; more wait, up to `maxQueued`, then fail fast (retried). */
  readonly maxConcurrency: number;
  readonly maxQueued: number;
  /**
   * Programs a swap transaction may call: any other in an upstream answer fails the run before
   * anything is signed.
   */
  readonly allowedPrograms: readonly string[];
  /** SWAP_MAX_FEE_LAMPORTS: the most a run's compute unit price × unit limit may cost. */
  readonly maxFeeLamports: bigint;
  /** SWAP_MAX_PRICE_DEVIATION_BPS: how much worse than the price source's price a quote may be. */
  readonly maxPriceDeviationBps: number;
}

/**
 * Jupiter v6, the token programs and the associated token program. The System and Compute Budget
 * programs are never a route's to call (the service creates accounts and sets the budget itself),
 * listed or not.
 */
export const DEFAULT_SWAP_PROGRAMS = [
  "JUP6LkbZbjS1jKKwapdHNy74zcZ3tLUZoi5QNyVTaV4",
  "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA",
  "TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb",
  "ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL",
] as const;

/** How transfer agents' runs are carried out, and the guards beyond the owners' allowances. */
export interface TransferConfig {
  /** "chain": runs move real tokens; "simulated": they move nothing (dry runs, scheduler tests). */
  readonly executor: "chain" | "simulated";
  /** EXECUTOR_KEYPAIR: the service's key file (the fee payer); undefined makes one (embedded chain only). */
  readonly keypairPath: string | undefined;
  /**
   * DELEGATE_SEED: the file of the master secret every (owner, wallet) delegate is derived from;
   * undefined makes one (embedded chain only).
   */
  readonly delegateSeedPath: string | undefined;
  /** How long a transfer agent may stay pending, waiting for its owner's approval, before it fails. */
  readonly approvalWaitMs: number;
  /** Largest value one run may move, in US dollars. */
  readonly maxUsdPerRun: number;
  /** Largest value one agent may move per UTC day, in US dollars. */
  readonly maxUsdPerDay: number;
  /**
   * The executor's balance below which it is reported as unable to pay fees (in /readyz's body,
   * a log line and `executor_balance_lamports`), in lamports.
   */
  readonly executorMinLamports: number;
}

export class ConfigError extends Error {
  override readonly name = "ConfigError";
}

/** One variable: its name, default, and meaning. docs/configuration.md lists them (test/docs.test.ts checks it). */
export const CONFIG_VARIABLES = {
  HOST: "0.0.0.0",
  PORT: "8080",
  LOG_LEVEL: "info",
  LOG_BUFFER_BYTES: "8388608",
  CORS_ORIGINS: "",
  MAX_REQUEST_BYTES: "1048576",
  SHUTDOWN_TIMEOUT_MS: "10000",
  MAX_CONNECTIONS: "1000",
  HTTP2_MAX_CONCURRENT_STREAMS: "100",
  HEADERS_TIMEOUT_MS: "10000",
  REQUEST_TIMEOUT_MS: "30000",
  IDLE_TIMEOUT_MS: "60000",
  SCHEDULER_ENABLED: "true",
  LEAN_UNARY: "true",
  AUTH_MODE: "",
  ADMIN_API_KEY: "",
  AUTH_PUBLIC_TOKEN_READS: "false",
  AUTH_PUBLIC_REFLECTION: "true",
  RATE_LIMIT_READ_PER_SECOND: "100",
  RATE_LIMIT_READ_BURST: "200",
  RATE_LIMIT_WRITE_PER_SECOND: "20",
  RATE_LIMIT_WRITE_BURST: "40",
  RATE_LIMIT_ANONYMOUS_PER_SECOND: "2",
  RATE_LIMIT_ANONYMOUS_BURST: "20",
  SCHEDULER_CONCURRENCY: "64",
  SCHEDULER_POLL_INTERVAL_MS: "1000",
  SCHEDULER_LEASE_MS: "30000",
  SCHEDULER_ATTEMPT_TIMEOUT_MS: "20000",
  SCHEDULER_MAX_ATTEMPTS: "3",
  SCHEDULER_RETRY_BASE_MS: "1000",
  SCHEDULER_RETRY_MAX_MS: "60000",
  SCHEDULER_MAX_CONSECUTIVE_FAILURES: "3",
  PENDING_WATCH_MAX_ACCOUNTS: "1000",
  SCHEDULE_TIME_SCALE: "1",
  SIMULATED_FAILURE_RATE: "0",
  SIMULATED_HANG_RATE: "0",
  SIMULATED_LATENCY_MS: "0",
  MONGODB_URI: "",
  MONGODB_DB: "",
  MONGODB_MAX_POOL_SIZE: "20",
  MONGODB_SERVER_SELECTION_TIMEOUT_MS: "2000",
  MONGODB_CONNECT_TIMEOUT_MS: "2000",
  MONGODB_SOCKET_TIMEOUT_MS: "5000",
  MONGODB_OPERATION_TIMEOUT_MS: "5000",
  SOLANA_RPC_URL: "",
  SOLANA_WS_URL: "",
  SOLANA_COMMITMENT: "confirmed",
  SOLANA_RPC_TIMEOUT_MS: "3000",
  SOLANA_RPC_MAX_CONCURRENCY: "16",
  SOLANA_RPC_MAX_QUEUED: "256",
  SOLANA_RPC_MAX_RETRIES: "2",
  SOLANA_RPC_RETRY_BASE_MS: "100",
  SOLANA_RPC_MAX_RETRY_WAIT_MS: "2000",
  SOLANA_RPC_MAX_RESPONSE_BYTES: "8388608",
  SOLANA_TRANSACTION_CACHE: "5000",
  LOCAL_SOLANA_RPC_PORT: "8899",
  LOCAL_SOLANA_STATE: "",
  LOCAL_SOLANA_SLOT_MS: "400",
  LOCAL_SOLANA_MAX_ANSWER_BYTES: "8388608",
  LOCAL_SOLANA_MAX_REQUEST_MS: "2000",
  LOCAL_SOLANA_WRITE_TIMEOUT_MS: "10000",
  LOCAL_SOLANA_MAX_CONNECTIONS: "64",
  LOCAL_SOLANA_MAX_IN_FLIGHT_PER_CONNECTION: "8",
  LOCAL_SOLANA_MAX_UNSENT_BYTES: "67108864",
  LOCAL_SOLANA_HISTORY: "100000",
  LOCAL_SOLANA_AIRDROPS_PER_SECOND: "2",
  LOCAL_SOLANA_AIRDROP_BURST: "20",
  LOCAL_SOLANA_CHEATCODES: "",
  LOCAL_SOLANA_ALLOWED_HOSTS: "",
  LOCAL_SOLANA_PUBSUB_MAX_CONNECTIONS: "256",
  LOCAL_SOLANA_PUBSUB_MAX_SUBSCRIPTIONS_PER_CONNECTION: "1000",
  LOCAL_SOLANA_PUBSUB_MAX_SUBSCRIPTIONS: "10000",
  LOCAL_SOLANA_PUBSUB_MAX_SUBSCRIPTIONS_PER_ADDRESS: "",
  LOCAL_SOLANA_PUBSUB_MAX_MESSAGE_BYTES: "65536",
  LOCAL_SOLANA_PUBSUB_MAX_BUFFERED_BYTES: "1048576",
  TRANSFER_EXECUTOR: "chain",
  EXECUTOR_KEYPAIR: "",
  DELEGATE_SEED: "",
  APPROVAL_WAIT_HOURS: "72",
  ALLOW_ANONYMOUS_TRANSFERS: "false",
  TRANSFER_MAX_USD_PER_RUN: "1000",
  TRANSFER_MAX_USD_PER_DAY: "10000",
  EXECUTOR_MIN_LAMPORTS: "50000000",
  JUPITER_API_URL: "",
  JUPITER_API_KEY: "",
  PRICE_WATCHLIST: "",
  PRICE_TTL_MS: "5000",
  PRICE_MAX_STALE_MS: "300000",
  TOKEN_LIST_TTL_MS: "21600000",
  JUPITER_TIMEOUT_MS: "3000",
  JUPITER_MAX_CONCURRENCY: "8",
  JUPITER_MAX_QUEUED: "64",
  JUPITER_MAX_RESPONSE_BYTES: "1048576",
  JUPITER_MAX_TOKEN_LIST_BYTES: "33554432",
  PRICE_CACHE_ENTRIES: "10000",
  JUPITER_BREAKER_FAILURES: "5",
  JUPITER_BREAKER_OPEN_MS: "10000",
  JUPITER_SWAP_URL: "",
  JUPITER_SWAP_TIMEOUT_MS: "5000",
  JUPITER_SWAP_MAX_RESPONSE_BYTES: "262144",
  JUPITER_SWAP_MAX_CONCURRENCY: "8",
  JUPITER_SWAP_MAX_QUEUED: "64",
  // Empty: DEFAULT_SWAP_PROGRAMS.
  SWAP_ALLOWED_PROGRAMS: "",
  SWAP_MAX_FEE_LAMPORTS: "1000000",
  SWAP_MAX_PRICE_DEVIATION_BPS: "300",
  CATALOG_PRICE_TICK_MS: "0",
  PRICE_WATCH_INTERVAL_MS: "1000",
  STREAM_HEARTBEAT_MS: "15000",
  STREAM_MAX_PER_KEY: "100",
  STREAM_BUFFER_MESSAGES: "256",
  STREAM_WRITE_TIMEOUT_MS: "30000",
  EVENT_POLL_INTERVAL_MS: "250",
  EVENT_RETENTION_HOURS: "72",
  EVENT_REPAIR_INTERVAL_MS: "60000",
  EVENT_REPAIR_WINDOW_MS: "120000",
  WEBHOOKS_ENABLED: "true",
  WEBHOOK_ALLOW_HTTP: "false",
  WEBHOOK_ALLOW_PRIVATE_NETWORKS: "false",
  WEBHOOK_MAX_ENDPOINTS_PER_OWNER: "10",
  MAX_AGENTS_PER_OWNER: "1000",
  MAX_PENDING_PER_OWNER: "100",
  WEBHOOK_TIMEOUT_MS: "10000",
  WEBHOOK_CONNECT_TIMEOUT_MS: "3000",
  WEBHOOK_CONCURRENCY: "32",
  WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT: "4",
  WEBHOOK_MAX_IN_FLIGHT_PER_OWNER: "8",
  WEBHOOK_POLL_INTERVAL_MS: "250",
  WEBHOOK_RETRY_BASE_MS: "5000",
  WEBHOOK_RETRY_MAX_MS: "14400000",
  WEBHOOK_RETRY_FOR_HOURS: "24",
  WEBHOOK_DISABLE_AFTER_HOURS: "72",
  WEBHOOK_SECRET_OVERLAP_HOURS: "24",
  WEBHOOK_DELIVERY_RETENTION_HOURS: "168",
} as const;

/** The local chain port's limits when nothing configures them (tests, tools that start a chain). */
export const DEFAULT_LOCAL_CHAIN_PORT_LIMITS: LocalChainPortLimits = {
  maxAnswerBytes: Number(CONFIG_VARIABLES.LOCAL_SOLANA_MAX_ANSWER_BYTES),
  maxRequestMs: Number(CONFIG_VARIABLES.LOCAL_SOLANA_MAX_REQUEST_MS),
  writeTimeoutMs: Number(CONFIG_VARIABLES.LOCAL_SOLANA_WRITE_TIMEOUT_MS),
  maxConnections: Number(CONFIG_VARIABLES.LOCAL_SOLANA_MAX_CONNECTIONS),
  maxInFlightPerConnection: Number(CONFIG_VARIABLES.LOCAL_SOLANA_MAX_IN_FLIGHT_PER_CONNECTION),
  maxUnsentBytes: Number(CONFIG_VARIABLES.LOCAL_SOLANA_MAX_UNSENT_BYTES),
};

/** The local chain's PubSub limits when nothing configures them. */
export const DEFAULT_LOCAL_CHAIN_PUBSUB_LIMITS: LocalChainPubSubLimits = {
  maxConnections: Number(CONFIG_VARIABLES.LOCAL_SOLANA_PUBSUB_MAX_CONNECTIONS),
  maxSubscriptionsPerConnection: Number(
    CONFIG_VARIABLES.LOCAL_SOLANA_PUBSUB_MAX_SUBSCRIPTIONS_PER_CONNECTION,
  ),
  maxSubscriptions: Number(CONFIG_VARIABLES.LOCAL_SOLANA_PUBSUB_MAX_SUBSCRIPTIONS),
  maxMessageBytes: Number(CONFIG_VARIABLES.LOCAL_SOLANA_PUBSUB_MAX_MESSAGE_BYTES),
  maxBufferedBytes: Number(CONFIG_VARIABLES.LOCAL_SOLANA_PUBSUB_MAX_BUFFERED_BYTES),
};

/**
 * What one remote address may hold of the PubSub port's subscriptions: as configured, else a
 * quarter of the node's cap (at least one).
 */
export function pubsubAddressShare(
  limits: Pick<LocalChainPubSubLimits, "maxSubscriptions" | "maxSubscriptionsPerAddress">,
): number {
  const node = limits.maxSubscriptions ?? Number(CONFIG_VARIABLES.LOCAL_SOLANA_PUBSUB_MAX_SUBSCRIPTIONS);
  return limits.maxSubscriptionsPerAddress ?? Math.max(1, Math.floor(node / 4));
}

type Env = Readonly<Record<string, string | undefined>>;

/** Reads and validates the configuration; throws ConfigError naming each bad variable. */
export function loadConfig(env: Env = process.env): Config {
  const problems: string[] = [];
  const read = (name: keyof typeof CONFIG_VARIABLES): string => {
    const value = env[name]?.trim();
    return value === undefined || value === "" ? CONFIG_VARIABLES[name] : value;
  };
  const int = (name: keyof typeof CONFIG_VARIABLES, min: number, max: number): number => {
    const text = read(name);
    const value = Number(text);
    if (!/^\d+$/.test(text) || value < min || value > max) {
      problems.push(`${name} must be an integer from ${min} to ${max} (got "${text}")`);
    }
    return value;
  };

  const bool = (name: keyof typeof CONFIG_VARIABLES): boolean => {
    const text = read(name).toLowerCase();
    if (!["true", "false", "1", "0"].includes(text))
      problems.push(`${name} must be true or false (got "${text}")`);
    return text === "true" || text === "1";
  };

  const host = read("HOST");
  const port = int("PORT", 0, 65535);
  const logLevel = read("LOG_LEVEL").toLowerCase();
  if (!(LOG_LEVELS as readonly string[]).includes(logLevel)) {
    problems.push(`LOG_LEVEL must be one of ${LOG_LEVELS.join(", ")} (got "${logLevel}")`);
  }
  const logBufferBytes = int("LOG_BUFFER_BYTES", 1024, 1024 * 1024 * 1024);
  const corsOrigins = parseOrigins(read("CORS_ORIGINS"), problems);
  const maxRequestBytes = int("MAX_REQUEST_BYTES", 1024, 64 * 1024 * 1024);
  const shutdownTimeoutMs = int("SHUTDOWN_TIMEOUT_MS", 0, 600_000);
  const leanUnary = bool("LEAN_UNARY");
  const http: HttpLimits = {
    maxConnections: int("MAX_CONNECTIONS", 1, 1_000_000),
    maxConcurrentStreams: int("HTTP2_MAX_CONCURRENT_STREAMS", 1, 10_000),
    headersTimeoutMs: int("HEADERS_TIMEOUT_MS", 100, 600_000),
    requestTimeoutMs: int("REQUEST_TIMEOUT_MS", 100, 3_600_000),
    idleTimeoutMs: int("IDLE_TIMEOUT_MS", 100, 3_600_000),
  };
  const ratio = (name: keyof typeof CONFIG_VARIABLES): number => {
    const text = read(name);
    const value = Number(text);
    if (!/^(0|1|0?\.\d+|1\.0*)$/.test(text))
      problems.push(`${name} must be a number from 0 to 1 (got "${text}")`);
    return value;
  };
  const scheduler: SchedulerConfig = {
    enabled: bool("SCHEDULER_ENABLED"),
    concurrency: int("SCHEDULER_CONCURRENCY", 1, 1000),
    pollIntervalMs: int("SCHEDULER_POLL_INTERVAL_MS", 10, 60_000),
    leaseMs: int("SCHEDULER_LEASE_MS", 100, 3_600_000),
    attemptTimeoutMs: int("SCHEDULER_ATTEMPT_TIMEOUT_MS", 10, 3_600_000),
    maxAttempts: int("SCHEDULER_MAX_ATTEMPTS", 1, 100),
    retryBaseMs: int("SCHEDULER_RETRY_BASE_MS", 0, 3_600_000),
    retryMaxMs: int("SCHEDULER_RETRY_MAX_MS", 0, 86_400_000),
    maxConsecutiveFailures: int("SCHEDULER_MAX_CONSECUTIVE_FAILURES", 1, 1000),
    pendingWatchMaxAccounts: int("PENDING_WATCH_MAX_ACCOUNTS", 0, 10_000),
    timeScale: int("SCHEDULE_TIME_SCALE", 1, 10_000_000),
    simulatedFailureRate: ratio("SIMULATED_FAILURE_RATE"),
    simulatedHangRate: ratio("SIMULATED_HANG_RATE"),
    simulatedLatencyMs: int("SIMULATED_LATENCY_MS", 0, 600_000),
  };
  if (http.requestTimeoutMs < http.headersTimeoutMs) {
    // Node's HTTP/1.1 server refuses this combination; say so in our words.
    problems.push(
      `REQUEST_TIMEOUT_MS must be at least HEADERS_TIMEOUT_MS (got ${http.requestTimeoutMs} and ${http.headersTimeoutMs})`,
    );
  }

  let mongo: MongoConfig | undefined;
  const uri = read("MONGODB_URI");
  if (uri !== "" && !/^mongodb(\+srv)?:\/\/[^/?#]/.test(uri)) {
    // The URI itself is not echoed: it may hold a password.
    problems.push('MONGODB_URI must start with "mongodb://" or "mongodb+srv://" followed by a host');
  }
  const dbName = read("MONGODB_DB");
  if (dbName !== "" && !/^[^/\\. "$*<>:|?]{1,63}$/.test(dbName)) {
    problems.push(`MONGODB_DB must be a valid MongoDB database name (got "${dbName}")`);
  }
  const maxPoolSize = int("MONGODB_MAX_POOL_SIZE", 1, 1000);
  const serverSelectionTimeoutMs = int("MONGODB_SERVER_SELECTION_TIMEOUT_MS", 100, 120_000);
  const connectTimeoutMs = int("MONGODB_CONNECT_TIMEOUT_MS", 100, 120_000);
  const socketTimeoutMs = int("MONGODB_SOCKET_TIMEOUT_MS", 0, 600_000);
  const operationTimeoutMs = int("MONGODB_OPERATION_TIMEOUT_MS", 100, 600_000);
  if (uri !== "") {
    mongo = {
      uri,
      dbName: dbName === "" ? undefined : dbName,
      maxPoolSize,
      serverSelectionTimeoutMs,
      connectTimeoutMs,
      socketTimeoutMs,
      operationTimeoutMs,
    };
  }

  // Keys are required wherever agents outlive the process (MongoDB) or in production (the
  // container); the embedded in-memory default stays open so `npm start` answers at once.
  const authModeText = read("AUTH_MODE").toLowerCase();
  const production = (env.NODE_ENV ?? "").trim().toLowerCase() === "production";
  // Against a cluster, transfers move real tokens: keys by default, as for MongoDB and production.
  const onCluster = read("SOLANA_RPC_URL") !== "";
  const authMode =
    authModeText === "" ? (uri !== "" || production || onCluster ? "apikey" : "none") : authModeText;
  if (authMode !== "apikey" && authMode !== "none") {
    problems.push(`AUTH_MODE must be apikey or none (got "${authModeText}")`);
  }
  const adminKey = read("ADMIN_API_KEY");
  if (adminKey !== "" && (adminKey.length < 32 || adminKey.length > 256 || /\s/.test(adminKey))) {
    // The value is a secret: never echoed.
    problems.push("ADMIN_API_KEY must be 32 to 256 characters without spaces");
  }
  const bucket = (prefix: "READ" | "WRITE" | "ANONYMOUS"): RateLimitConfig => ({
    rate: int(`RATE_LIMIT_${prefix}_PER_SECOND`, 1, 1_000_000),
    burst: int(`RATE_LIMIT_${prefix}_BURST`, 1, 1_000_000),
  });
  const auth: AuthConfig = {
    mode: authMode as AuthConfig["mode"],
    adminKey: adminKey === "" ? undefined : adminKey,
    publicTokenReads: bool("AUTH_PUBLIC_TOKEN_READS"),
    publicReflection: bool("AUTH_PUBLIC_REFLECTION"),
    read: bucket("READ"),
    write: bucket("WRITE"),
    anonymous: bucket("ANONYMOUS"),
  };

  const solana = readSolana(read, int, bool, problems, production);
  const transfers = readTransfers(read, int, problems, solana);
  if (
    authMode === "none" &&
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
  const prices = readPrices(read, int, problems);
  const swaps = readSwaps(read, int, problems);
  const streams: StreamsConfig = {
    heartbeatMs: int("STREAM_HEARTBEAT_MS", 100, 3_600_000),
    maxPerKey: int("STREAM_MAX_PER_KEY", 1, 1_000_000),
    bufferMessages: int("STREAM_BUFFER_MESSAGES", 1, 100_000),
    writeTimeoutMs: int("STREAM_WRITE_TIMEOUT_MS", 100, 3_600_000),
    eventPollIntervalMs: int("EVENT_POLL_INTERVAL_MS", 10, 60_000),
    eventRetentionMs: int("EVENT_RETENTION_HOURS", 1, 24 * 365) * 3_600_000,
    eventRepairIntervalMs: int("EVENT_REPAIR_INTERVAL_MS", 100, 3_600_000),
    eventRepairWindowMs: int("EVENT_REPAIR_WINDOW_MS", 1_000, 86_400_000),
  };
  if (streams.eventRepairWindowMs < streams.eventRepairIntervalMs) {
    // A change between two sweeps would fall outside both windows.
    problems.push(
      `EVENT_REPAIR_WINDOW_MS must be at least EVENT_REPAIR_INTERVAL_MS (got ${streams.eventRepairWindowMs} and ${streams.eventRepairIntervalMs})`,
    );
  }
  if (streams.heartbeatMs >= http.idleTimeoutMs) {
    // The connection would be closed as idle before its first heartbeat.
    problems.push(
      `STREAM_HEARTBEAT_MS must be below IDLE_TIMEOUT_MS (got ${streams.heartbeatMs} and ${http.idleTimeoutMs})`,
    );
  }

  const hours = (name: keyof typeof CONFIG_VARIABLES, max: number) => int(name, 1, max) * 3_600_000;
  const webhooks: WebhooksConfig = {
    enabled: bool("WEBHOOKS_ENABLED"),
    allowHttp: bool("WEBHOOK_ALLOW_HTTP"),
    allowPrivateNetworks: bool("WEBHOOK_ALLOW_PRIVATE_NETWORKS"),
    maxEndpointsPerOwner: int("WEBHOOK_MAX_ENDPOINTS_PER_OWNER", 1, 1000),
    timeoutMs: int("WEBHOOK_TIMEOUT_MS", 100, 60_000),
    connectTimeoutMs: int("WEBHOOK_CONNECT_TIMEOUT_MS", 100, 60_000),
    concurrency: int("WEBHOOK_CONCURRENCY", 1, 1000),
    maxInFlightPerEndpoint: int("WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT", 1, 100),
    maxInFlightPerOwner: int("WEBHOOK_MAX_IN_FLIGHT_PER_OWNER", 1, 1000),
    pollIntervalMs: int("WEBHOOK_POLL_INTERVAL_MS", 10, 60_000),
    retryBaseMs: int("WEBHOOK_RETRY_BASE_MS", 1, 3_600_000),
    retryMaxMs: int("WEBHOOK_RETRY_MAX_MS", 1, 86_400_000),
    retryForMs: hours("WEBHOOK_RETRY_FOR_HOURS", 24 * 30),
    disableAfterMs: hours("WEBHOOK_DISABLE_AFTER_HOURS", 24 * 365),
    secretOverlapMs: hours("WEBHOOK_SECRET_OVERLAP_HOURS", 24 * 30),
    deliveryRetentionMs: hours("WEBHOOK_DELIVERY_RETENTION_HOURS", 24 * 365),
  };

  const agentCaps = {
    maxAgents: int("MAX_AGENTS_PER_OWNER", 1, 10_000_000),
    maxPending: int("MAX_PENDING_PER_OWNER", 1, 10_000_000),
  };

  if (problems.length > 0) {
    throw new ConfigError(`invalid configuration: ${problems.join("; ")}`);
  }
  return {
    host,
    port,
    logLevel: logLevel as LogLevel,
    logBufferBytes,
    corsOrigins,
    maxRequestBytes,
    leanUnary,
    shutdownTimeoutMs,
    http,
    scheduler,
    auth,
    mongo,
    solana,
    transfers,
    prices,
    swaps,
    streams,
    webhooks,
    agentCaps,
  };
}

type Read = (name: keyof typeof CONFIG_VARIABLES) => string;
type Int = (name: keyof typeof CONFIG_VARIABLES, min: number, max: number) => number;
type Bool = (name: keyof typeof CONFIG_VARIABLES) => boolean;

function readSolana(read: Read, int: Int, bool: Bool, problems: string[], production: boolean): SolanaConfig {
  const url = read("SOLANA_RPC_URL");
  if (url !== "" && !isHttpUrl(url)) {
    // Not echoed: providers put their API key in the URL.
    problems.push("SOLANA_RPC_URL must be an http:// or https:// URL");
  }
  const wsUrl = read("SOLANA_WS_URL");
  if (wsUrl !== "" && !isWsUrl(wsUrl)) {
    // Not echoed either: the same providers put the same key in it.
    problems.push("SOLANA_WS_URL must be a ws:// or wss:// URL");
  }
  const commitment = read("SOLANA_COMMITMENT").toLowerCase();
  if (!(SOLANA_COMMITMENTS as readonly string[]).includes(commitment)) {
    problems.push(`SOLANA_COMMITMENT must be one of ${SOLANA_COMMITMENTS.join(", ")} (got "${commitment}")`);
  }
  const statePath = read("LOCAL_SOLANA_STATE");
  return {
    rpcUrl: url === "" ? undefined : url,
    wsUrl: wsUrl === "" ? undefined : wsUrl,
    commitment: commitment as SolanaCommitment,
    timeoutMs: int("SOLANA_RPC_TIMEOUT_MS", 10, 600_000),
    maxConcurrency: int("SOLANA_RPC_MAX_CONCURRENCY", 1, 1000),
    maxQueued: int("SOLANA_RPC_MAX_QUEUED", 0, 100_000),
    maxRetries: int("SOLANA_RPC_MAX_RETRIES", 0, 10),
    retryBaseMs: int("SOLANA_RPC_RETRY_BASE_MS", 0, 60_000),
    maxRetryWaitMs: int("SOLANA_RPC_MAX_RETRY_WAIT_MS", 0, 600_000),
    maxResponseBytes: int("SOLANA_RPC_MAX_RESPONSE_BYTES", 1024, 1024 * 1024 * 1024),
    transactionCache: int("SOLANA_TRANSACTION_CACHE", 0, 1_000_000),
    local: {
      port: int("LOCAL_SOLANA_RPC_PORT", 0, 65535),
      statePath: statePath === "" ? undefined : statePath,
      slotMs: int("LOCAL_SOLANA_SLOT_MS", 1, 60_000),
      limits: {
        // At least room for a batch of refusals; at most what V8 can hold as one string.
        maxAnswerBytes: int("LOCAL_SOLANA_MAX_ANSWER_BYTES", 65_536, 256 * 1024 * 1024),
        maxRequestMs: int("LOCAL_SOLANA_MAX_REQUEST_MS", 10, 600_000),
        writeTimeoutMs: int("LOCAL_SOLANA_WRITE_TIMEOUT_MS", 10, 600_000),
        maxConnections: int("LOCAL_SOLANA_MAX_CONNECTIONS", 1, 100_000),
        maxInFlightPerConnection: int("LOCAL_SOLANA_MAX_IN_FLIGHT_PER_CONNECTION", 1, 1000),
        maxUnsentBytes: int("LOCAL_SOLANA_MAX_UNSENT_BYTES", 1024 * 1024, 4 * 1024 * 1024 * 1024),
      },
      // At least a few blocks' worth; at most what fits in memory at ~2 KB each (20 GB).
      history: int("LOCAL_SOLANA_HISTORY", 1000, 10_000_000),
      airdropLimit: {
        rate: int("LOCAL_SOLANA_AIRDROPS_PER_SECOND", 1, 1_000_000),
        burst: int("LOCAL_SOLANA_AIRDROP_BURST", 1, 1_000_000),
      },
      // Unset: on for development, off in the container (NODE_ENV=production).
      cheatcodes: read("LOCAL_SOLANA_CHEATCODES") === "" ? !production : bool("LOCAL_SOLANA_CHEATCODES"),
      allowedHosts: parseHosts(read("LOCAL_SOLANA_ALLOWED_HOSTS"), problems),
      pubsub: {
        maxConnections: int("LOCAL_SOLANA_PUBSUB_MAX_CONNECTIONS", 1, 100_000),
        maxSubscriptionsPerConnection: int(
          "LOCAL_SOLANA_PUBSUB_MAX_SUBSCRIPTIONS_PER_CONNECTION",
          1,
          1_000_000,
        ),
        maxSubscriptions: int("LOCAL_SOLANA_PUBSUB_MAX_SUBSCRIPTIONS", 1, 10_000_000),
        // Unset: a quarter of the node's cap (pubsubAddressShare).
        ...(read("LOCAL_SOLANA_PUBSUB_MAX_SUBSCRIPTIONS_PER_ADDRESS") === ""
          ? {}
          : {
              maxSubscriptionsPerAddress: int(
                "LOCAL_SOLANA_PUBSUB_MAX_SUBSCRIPTIONS_PER_ADDRESS",
                1,
                10_000_000,
              ),
            }),
        // At least room for a transaction's signatureSubscribe; at most Agave's own frame bound.
        maxMessageBytes: int("LOCAL_SOLANA_PUBSUB_MAX_MESSAGE_BYTES", 1024, 16 * 1024 * 1024),
        maxBufferedBytes: int("LOCAL_SOLANA_PUBSUB_MAX_BUFFERED_BYTES", 65_536, 1024 * 1024 * 1024),
      },
    },
  };
}

function readTransfers(read: Read, int: Int, problems: string[], solana: SolanaConfig): TransferConfig {
  const executor = read("TRANSFER_EXECUTOR").toLowerCase();
  if (executor !== "chain" && executor !== "simulated") {
    problems.push(`TRANSFER_EXECUTOR must be chain or simulated (got "${executor}")`);
  }
  const keypairPath = read("EXECUTOR_KEYPAIR");
  // On a cluster the executor pays fees and holds delegations: a key made up at start would be a
  // new, unfunded delegate on every restart, so the operator must give one.
  if (keypairPath === "" && executor === "chain" && solana.rpcUrl !== undefined && isHttpUrl(solana.rpcUrl)) {
    problems.push(
      "EXECUTOR_KEYPAIR is required when SOLANA_RPC_URL is set: the path of the executor's Solana keypair file (solana-keygen new -o executor.json; chmod 600)",
    );
  }
  const delegateSeedPath = read("DELEGATE_SEED");
  // Every delegate owners approve is derived from it: one made up at start would orphan every
  // approval on the next restart.
  if (
    delegateSeedPath === "" &&
    executor === "chain" &&
    solana.rpcUrl !== undefined &&
    isHttpUrl(solana.rpcUrl)
  ) {
    problems.push(
      "DELEGATE_SEED is required when SOLANA_RPC_URL is set: the path of a file of 32 random bytes the delegates are derived from (head -c 32 /dev/urandom > delegate.seed; chmod 600)",
    );
  }
  return {
    executor: executor as TransferConfig["executor"],
    keypairPath: keypairPath === "" ? undefined : keypairPath,
    delegateSeedPath: delegateSeedPath === "" ? undefined : delegateSeedPath,
    approvalWaitMs: int("APPROVAL_WAIT_HOURS", 1, 24 * 365) * 3_600_000,
    maxUsdPerRun: int("TRANSFER_MAX_USD_PER_RUN", 0, 1_000_000_000),
    maxUsdPerDay: int("TRANSFER_MAX_USD_PER_DAY", 0, 1_000_000_000),
    // Up to a million SOL: more is no floor anyone means.
    executorMinLamports: int("EXECUTOR_MIN_LAMPORTS", 0, 1_000_000 * 1_000_000_000),
  };
}

/** Programs SWAP_ALLOWED_PROGRAMS may name: a transaction calls a few dozen at most. */
const MAX_SWAP_PROGRAMS = 64;

/** Jupiter's Swap API, for JUPITER_SWAP_URL unset against a cluster. */
export const JUPITER_SWAP_DEFAULT_URL = "https://api.jup.ag/swap/v2";

function readSwaps(read: Read, int: Int, problems: string[]): SwapsConfig {
  const given = read("JUPITER_SWAP_URL").replace(/\/+$/, "");
  const localRoutes = given === "" && read("SOLANA_RPC_URL") === "";
  const url = given === "" ? JUPITER_SWAP_DEFAULT_URL : given;
  if (!isHttpUrl(url)) problems.push("JUPITER_SWAP_URL must be an http:// or https:// URL");
  const listed = read("SWAP_ALLOWED_PROGRAMS");
  const programs = [
    ...new Set(
      (listed === "" ? DEFAULT_SWAP_PROGRAMS.join(",") : listed)
        .split(",")
        .map((p) => p.trim())
        .filter((p) => p !== ""),
    ),
  ];
  const bad = programs.filter((p) => !isAddress(p));
  if (programs.length === 0) {
    problems.push("SWAP_ALLOWED_PROGRAMS must name at least one program (comma-separated addresses)");
  } else if (bad.length > 0) {
    problems.push(
      `SWAP_ALLOWED_PROGRAMS must be a comma-separated list of program addresses (base58, 32 bytes); not one: "${bad[0]?.slice(0, 60)}"`,
    );
  } else if (programs.length > MAX_SWAP_PROGRAMS) {
    problems.push(
      `SWAP_ALLOWED_PROGRAMS must name at most ${MAX_SWAP_PROGRAMS} programs (got ${programs.length})`,
    );
  }
  return {
    jupiterSwapUrl: url,
    localRoutes,
    timeoutMs: int("JUPITER_SWAP_TIMEOUT_MS", 10, 600_000),
    // A real answer is a few kilobytes (a transaction is at most 1,232 bytes, its tables a few more).
    maxResponseBytes: int("JUPITER_SWAP_MAX_RESPONSE_BYTES", 1024, 64 * 1024 * 1024),
    maxConcurrency: int("JUPITER_SWAP_MAX_CONCURRENCY", 1, 1000),
    maxQueued: int("JUPITER_SWAP_MAX_QUEUED", 0, 100_000),
    allowedPrograms: programs,
    // Up to 1 SOL: above it a single run's fee is no longer a bound worth the name.
    maxFeeLamports: BigInt(int("SWAP_MAX_FEE_LAMPORTS", 0, 1_000_000_000)),
    maxPriceDeviationBps: int("SWAP_MAX_PRICE_DEVIATION_BPS", 0, 10_000),
  };
}

/** Mints a watchlist may hold: GetTokenPrices answers them all in one call. */
const MAX_WATCHLIST = 500;

function readPrices(read: Read, int: Int, problems: string[]): PricesConfig {
  const url = read("JUPITER_API_URL").replace(/\/+$/, "");
  if (url !== "" && !isHttpUrl(url)) problems.push("JUPITER_API_URL must be an http:// or https:// URL");
  const key = read("JUPITER_API_KEY");
  if (/[\s\p{Cc}]/u.test(key)) problems.push("JUPITER_API_KEY must not contain spaces or control characters");
  const listed = read("PRICE_WATCHLIST");
  let watchlist: string[] | undefined;
  if (listed !== "") {
    watchlist = [...new Set(listed.split(",").map((m) => m.trim()))];
    const bad = watchlist.filter((m) => !isAddress(m));
    if (bad.length > 0) {
      problems.push(
        `PRICE_WATCHLIST must be a comma-separated list of mint addresses (base58, 32 bytes); not one: "${bad[0]}"`,
      );
    } else if (watchlist.length > MAX_WATCHLIST) {
      problems.push(`PRICE_WATCHLIST must hold at most ${MAX_WATCHLIST} mints (got ${watchlist.length})`);
    }
  }
  const ttlMs = int("PRICE_TTL_MS", 1, 3_600_000);
  const maxStaleMs = int("PRICE_MAX_STALE_MS", 0, 86_400_000);
  if (maxStaleMs < ttlMs) problems.push("PRICE_MAX_STALE_MS must be at least PRICE_TTL_MS");
  return {
    jupiterUrl: url === "" ? undefined : url,
    jupiterApiKey: key === "" ? undefined : key,
    watchlist,
    ttlMs,
    maxStaleMs,
    tokenListTtlMs: int("TOKEN_LIST_TTL_MS", 1000, 7 * 86_400_000),
    timeoutMs: int("JUPITER_TIMEOUT_MS", 10, 600_000),
    maxConcurrency: int("JUPITER_MAX_CONCURRENCY", 1, 1000),
    maxQueued: int("JUPITER_MAX_QUEUED", 0, 100_000),
    maxResponseBytes: int("JUPITER_MAX_RESPONSE_BYTES", 1024, 1024 * 1024 * 1024),
    maxTokenListBytes: int("JUPITER_MAX_TOKEN_LIST_BYTES", 1024, 1024 * 1024 * 1024),
    cacheEntries: int("PRICE_CACHE_ENTRIES", 100, 10_000_000),
    breakerFailures: int("JUPITER_BREAKER_FAILURES", 1, 1000),
    breakerOpenMs: int("JUPITER_BREAKER_OPEN_MS", 10, 3_600_000),
    catalogTickMs: int("CATALOG_PRICE_TICK_MS", 0, 86_400_000),
    watchIntervalMs: int("PRICE_WATCH_INTERVAL_MS", 10, 3_600_000),
  };
}

/** A host name as a Host header carries it, without its port: letters, digits, dots and dashes. */
const HOST_NAME = /^(?=.{1,253}$)[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/;

function parseHosts(text: string, problems: string[]): string[] {
  if (text === "") return [];
  const hosts = text.split(",").map((h) => h.trim().toLowerCase());
  for (const host of hosts) {
    if (!HOST_NAME.test(host)) {
      problems.push(
        `LOCAL_SOLANA_ALLOWED_HOSTS must be a comma-separated list of host names without ports, like devbox.local (got "${host.slice(0, 64)}")`,
      );
    }
  }
  return hosts;
}

function isHttpUrl(text: string): boolean {
  try {
    const url = new URL(text);
    return (url.protocol === "http:" || url.protocol === "https:") && url.hostname !== "";
  } catch {
    return false;
  }
}

function isWsUrl(text: string): boolean {
  try {
    const url = new URL(text);
    return (url.protocol === "ws:" || url.protocol === "wss:") && url.hostname !== "";
  } catch {
    return false;
  }
}

/**
 * A Solana RPC URL as logs may show it: scheme, host and port only. Providers carry their key in
 * the path (Triton), the query (Helius) or the user info, so nothing else is shown.
 */
export function redactRpcUrl(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return "(invalid URL)";
  }
}

function parseOrigins(text: string, problems: string[]): string[] {
  if (text === "") return [];
  const origins = text.split(",").map((o) => o.trim().replace(/\/$/, ""));
  for (const origin of origins) {
    if (origin !== "*" && !/^https?:\/\/[^/\s]+$/.test(origin)) {
      problems.push(
        `CORS_ORIGINS must be "*" or a comma-separated list of origins like https://app.example.com (got "${origin}")`,
      );
    }
  }
  return origins;
}

/** The MongoDB URI with any password replaced, for logs. */
export function redactUri(uri: string): string {
  return uri.replace(/^(mongodb(?:\+srv)?:\/\/[^:/@]*):[^@/]*@/, "$1:****@");
}

/** Which chain the service talks to, and the embedded local chain's settings. */
import type { RateLimitConfig } from "./auth-config.ts";
import type { ConfigReader } from "./config-reader.ts";
import { isHttpUrl, isWsUrl, parseChainOrigins, parseHosts } from "./config-urls.ts";
import { CONFIG_VARIABLES } from "./config-variables.ts";

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
  /**
   * Bytes of account data it may hold (LiteSVM keeps accounts outside V8's heap, so the heap
   * limit does not bound them): a transaction or cheatcode that would grow it past them is refused.
   */
  readonly maxAccountBytes: number;
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
  /**
   * Web origins (https://app.example) whose pages may call the chain's ports, besides pages served
   * from localhost, 127.0.0.1 and [::1]; only they get the Private Network Access grant. Any other
   * page is refused: the ports serve a faucet and cheatcodes.
   */
  readonly allowedOrigins: readonly string[];
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

export function readSolana(reader: ConfigReader, production: boolean): SolanaConfig {
  const { read, int, bool, problems } = reader;
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
      // At least room for the genesis (a few MB) and some; at most what a machine holds (64 GiB).
      maxAccountBytes: int("LOCAL_SOLANA_MAX_ACCOUNT_BYTES", 16 * 1024 * 1024, 64 * 1024 * 1024 * 1024),
      airdropLimit: {
        rate: int("LOCAL_SOLANA_AIRDROPS_PER_SECOND", 1, 1_000_000),
        burst: int("LOCAL_SOLANA_AIRDROP_BURST", 1, 1_000_000),
      },
      // Unset: on for development, off in the container (NODE_ENV=production).
      cheatcodes: read("LOCAL_SOLANA_CHEATCODES") === "" ? !production : bool("LOCAL_SOLANA_CHEATCODES"),
      allowedHosts: parseHosts(read("LOCAL_SOLANA_ALLOWED_HOSTS"), problems),
      allowedOrigins: parseChainOrigins(read("LOCAL_SOLANA_ALLOWED_ORIGINS"), problems),
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

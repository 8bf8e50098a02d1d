/**
 * Configuration: the real process refuses a bad environment at once, with one line on stderr that
 * names the variable (and never a stack trace or a password), and `loadConfig` reads and checks
 * each variable.
 */
import { describe, expect, it } from "vitest";
import {
  CONFIG_VARIABLES,
  ConfigError,
  DEFAULT_SWAP_PROGRAMS,
  loadConfig,
  redactRpcUrl,
  redactUri,
} from "../src/config.ts";
import { type MainProcess, spawnMain } from "./support/main-process.ts";

/**
 * A guard against a process that starts instead of refusing (it would then run until killed), not
 * a performance assertion: the refusal takes well under a second alone, but the driver's URI check
 * loads the MongoDB driver, and with two other test files on two cores a 5 s guard was missed once
 * in CI. Inside vitest's 30 s test timeout, so that the failure says what the process printed.
 */
const EXIT_DEADLINE_MS = 20_000;
const PASSWORD = "hunter2-s3cret";

async function exitOf(main: MainProcess) {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      main.kill();
      reject(new Error(`still running after ${EXIT_DEADLINE_MS} ms; stdout:\n${main.stdout()}`));
    }, EXIT_DEADLINE_MS);
  });
  try {
    return await Promise.race([main.exited, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

describe("the process refuses bad configuration", () => {
  const bad: { env: Record<string, string>; names: string[]; why?: string }[] = [
    { env: { PORT: "abc" }, names: ["PORT"] },
    { env: { PORT: "70000" }, names: ["PORT"] },
    { env: { PORT: "-1" }, names: ["PORT"] },
    { env: { LOG_LEVEL: "loud" }, names: ["LOG_LEVEL"] },
    { env: { MAX_REQUEST_BYTES: "-1" }, names: ["MAX_REQUEST_BYTES"] },
    { env: { LOG_BUFFER_BYTES: "100" }, names: ["LOG_BUFFER_BYTES"] },
    { env: { SHUTDOWN_TIMEOUT_MS: "soon" }, names: ["SHUTDOWN_TIMEOUT_MS"] },
    { env: { MONGODB_URI: "http://x" }, names: ["MONGODB_URI"] },
    {
      env: { MONGODB_URI: `http://admin:${PASSWORD}@db.example.com/agents` },
      names: ["MONGODB_URI"],
      why: "with a password",
    },
    { env: { MONGODB_DB: "a/b" }, names: ["MONGODB_DB"] },
    { env: { CORS_ORIGINS: "notanorigin" }, names: ["CORS_ORIGINS"] },
    {
      env: { SOLANA_RPC_URL: `ftp://${PASSWORD}@rpc.example.com` },
      names: ["SOLANA_RPC_URL"],
      why: "with a secret",
    },
    { env: { SOLANA_RPC_URL: "not a url" }, names: ["SOLANA_RPC_URL"] },
    {
      env: { SOLANA_WS_URL: `https://${PASSWORD}@rpc.example.com` },
      names: ["SOLANA_WS_URL"],
      why: "not ws://, with a secret",
    },
    { env: { PENDING_WATCH_MAX_ACCOUNTS: "10001" }, names: ["PENDING_WATCH_MAX_ACCOUNTS"] },
    { env: { SOLANA_COMMITMENT: "max-ish" }, names: ["SOLANA_COMMITMENT"] },
    { env: { LOCAL_SOLANA_RPC_PORT: "99999" }, names: ["LOCAL_SOLANA_RPC_PORT"] },
    { env: { SOLANA_RPC_TIMEOUT_MS: "0" }, names: ["SOLANA_RPC_TIMEOUT_MS"] },
    {
      env: { PORT: "abc", LOG_LEVEL: "loud", CORS_ORIGINS: "ftp://x" },
      names: ["PORT", "LOG_LEVEL", "CORS_ORIGINS"],
    },
    {
      env: { MONGODB_URI: `mongodb://admin:${PASSWORD}@127.0.0.1:99999/` },
      names: ["MONGODB_URI"],
      why: "passes the prefix check, but the driver cannot parse its port",
    },
    {
      env: { MONGODB_URI: `mongodb://admin:${PASSWORD}@127.0.0.1/?notAnOption=1` },
      names: ["MONGODB_URI"],
      why: "passes the prefix check, but the driver rejects its option",
    },
  ];

  it.each(
    bad.map((c) => [
      Object.entries(c.env)
        .map(([k, v]) => `${k}=${v.replace(PASSWORD, "****")}`)
        .join(" ") + (c.why === undefined ? "" : ` (${c.why})`),
      c,
    ]) as [string, (typeof bad)[number]][],
  )("%s: exits non-zero with one line naming the variable", async (_label, { env, names }) => {
    const main = spawnMain({ HOST: "127.0.0.1", PORT: "0", ...env });
    const exit = await exitOf(main);
    const stderr = main.stderr();
    expect(exit.signal, stderr).toBeNull();
    expect(exit.code, stderr).not.toBe(0);
    expect(stderr.endsWith("\n"), stderr).toBe(true);
    const lines = stderr.trimEnd().split("\n");
    expect(lines, stderr).toHaveLength(1);
    for (const name of names) expect(lines[0]).toContain(name);
    expect(stderr).not.toMatch(/^\s+at /m); // no stack trace
    expect(stderr).not.toContain(PASSWORD);
    expect(main.stdout()).not.toContain("serving");
  });
});

describe("loadConfig", () => {
  it("applies the defaults to an empty environment", () => {
    expect(loadConfig({})).toEqual({
      host: "0.0.0.0",
      port: 8080,
      logLevel: "info",
      logBufferBytes: 8_388_608,
      corsOrigins: [],
      maxRequestBytes: 1_048_576,
      leanUnary: true,
      shutdownTimeoutMs: 10_000,
      http: {
        maxConnections: 1000,
        maxConcurrentStreams: 100,
        headersTimeoutMs: 10_000,
        requestTimeoutMs: 30_000,
        idleTimeoutMs: 60_000,
      },
      scheduler: {
        enabled: true,
        concurrency: 64,
        pollIntervalMs: 1000,
        leaseMs: 30_000,
        attemptTimeoutMs: 20_000,
        maxAttempts: 3,
        retryBaseMs: 1000,
        retryMaxMs: 60_000,
        maxConsecutiveFailures: 3,
        pendingWatchMaxAccounts: 1000,
        timeScale: 1,
        simulatedFailureRate: 0,
        simulatedHangRate: 0,
        simulatedLatencyMs: 0,
      },
      auth: {
        mode: "none",
        adminKey: undefined,
        publicTokenReads: false,
        publicReflection: true,
        read: { rate: 100, burst: 200 },
        write: { rate: 20, burst: 40 },
        anonymous: { rate: 2, burst: 20 },
      },
      mongo: undefined,
      solana: {
        rpcUrl: undefined,
        wsUrl: undefined,
        commitment: "confirmed",
        timeoutMs: 3000,
        maxConcurrency: 16,
        maxQueued: 256,
        maxRetries: 2,
        retryBaseMs: 100,
        maxRetryWaitMs: 2000,
        maxResponseBytes: 8_388_608,
        transactionCache: 5000,
        local: {
          port: 8899,
          statePath: undefined,
          slotMs: 400,
          limits: {
            maxAnswerBytes: 8_388_608,
            maxRequestMs: 2000,
            writeTimeoutMs: 10_000,
            maxConnections: 64,
            maxInFlightPerConnection: 8,
            maxUnsentBytes: 67_108_864,
          },
          history: 100_000,
          maxAccountBytes: 268_435_456,
          airdropLimit: { rate: 2, burst: 20 },
          cheatcodes: true,
          allowedHosts: [],
          allowedOrigins: [],
          pubsub: {
            maxConnections: 256,
            maxSubscriptionsPerConnection: 1000,
            maxSubscriptions: 10_000,
            maxMessageBytes: 65_536,
            maxBufferedBytes: 1_048_576,
          },
        },
      },
      transfers: {
        executor: "chain",
        keypairPath: undefined,
        delegateSeedPath: undefined,
        approvalWaitMs: 72 * 3_600_000,
        maxUsdPerRun: 1000,
        maxUsdPerDay: 10_000,
        maxAccountCreationsPerDay: 1,
        executorMinLamports: 50_000_000,
      },
      prices: {
        jupiterUrl: undefined,
        jupiterApiKey: undefined,
        watchlist: undefined,
        ttlMs: 5000,
        maxStaleMs: 300_000,
        tokenListTtlMs: 21_600_000,
        timeoutMs: 3000,
        maxConcurrency: 8,
        maxQueued: 64,
        maxResponseBytes: 1_048_576,
        maxTokenListBytes: 33_554_432,
        cacheEntries: 10_000,
        breakerFailures: 5,
        breakerOpenMs: 10_000,
        catalogTickMs: 0,
        watchIntervalMs: 1000,
        pythHermesUrl: undefined,
        pythFeeds: [],
      },
      swaps: {
        jupiterSwapUrl: "https://api.jup.ag/swap/v2",
        // Unset on the embedded chain: the chain's local pools route swaps, not Jupiter.
        localRoutes: true,
        timeoutMs: 5000,
        maxResponseBytes: 262_144,
        maxConcurrency: 8,
        maxQueued: 64,
        allowedPrograms: [...DEFAULT_SWAP_PROGRAMS],
        maxFeeLamports: 1_000_000n,
        maxPriceDeviationBps: 300,
      },
      triggers: {
        maxLifetimeMs: 30 * 86_400_000,
        minUsd: 5,
        confirmations: 2,
        holdMs: 2000,
        refreshMs: 5000,
        maxWatched: 100_000,
        priceSources: ["prices"],
      },
      streams: {
        heartbeatMs: 15_000,
        maxPerKey: 100,
        bufferMessages: 256,
        eventPollIntervalMs: 250,
        eventRetentionMs: 72 * 3_600_000,
        eventRepairIntervalMs: 60_000,
        eventRepairWindowMs: 120_000,
        writeTimeoutMs: 30_000,
      },
      agentCaps: { maxAgents: 1000, maxPending: 100 },
      webhooks: {
        enabled: true,
        allowHttp: false,
        allowPrivateNetworks: false,
        maxEndpointsPerOwner: 10,
        timeoutMs: 10_000,
        concurrency: 32,
        maxInFlightPerEndpoint: 4,
        maxInFlightPerOwner: 8,
        connectTimeoutMs: 3000,
        pollIntervalMs: 250,
        retryBaseMs: 5000,
        retryMaxMs: 4 * 3_600_000,
        retryForMs: 24 * 3_600_000,
        disableAfterMs: 72 * 3_600_000,
        secretOverlapMs: 24 * 3_600_000,
        deliveryRetentionMs: 168 * 3_600_000,
      },
    });
  });

  it("refuses bad price settings, each by name, and never echoes JUPITER_API_KEY", () => {
    const attempt = (env: Record<string, string>) => {
      try {
        loadConfig(env);
        return "";
      } catch (error) {
        return (error as Error).message;
      }
    };
    expect(attempt({ JUPITER_API_URL: "ftp://jup.example" })).toContain(
      "JUPITER_API_URL must be an http:// or https:// URL",
    );
    expect(attempt({ JUPITER_API_KEY: "a key\nwith a newline" })).toContain(
      "JUPITER_API_KEY must not contain",
    );
    expect(attempt({ JUPITER_API_KEY: "a key\nwith a newline" })).not.toContain("with a newline");
    expect(attempt({ PRICE_WATCHLIST: "So11111111111111111111111111111111111111112,nope" })).toContain(
      'PRICE_WATCHLIST must be a comma-separated list of mint addresses (base58, 32 bytes); not one: "nope"',
    );
    expect(attempt({ PRICE_TTL_MS: "10000", PRICE_MAX_STALE_MS: "5000" })).toContain(
      "PRICE_MAX_STALE_MS must be at least PRICE_TTL_MS",
    );
    expect(attempt({ PRICE_TTL_MS: "0" })).toContain("PRICE_TTL_MS must be an integer from 1");
    // The answer bound leaves room for a batch of refusals.
    expect(attempt({ LOCAL_SOLANA_MAX_ANSWER_BYTES: "1000" })).toContain(
      "LOCAL_SOLANA_MAX_ANSWER_BYTES must be an integer from 65536",
    );
    // The bound on the chain's account data is a whole number of bytes, with room for the genesis and more.
    for (const bad of ["0", "-1", "1.5", "lots", "1000"]) {
      expect(attempt({ LOCAL_SOLANA_MAX_ACCOUNT_BYTES: bad })).toContain(
        `LOCAL_SOLANA_MAX_ACCOUNT_BYTES must be an integer from 16777216 to 68719476736 (got "${bad}")`,
      );
    }
    // The PubSub port's buffer leaves room for a notification of a token account and more.
    expect(attempt({ LOCAL_SOLANA_PUBSUB_MAX_BUFFERED_BYTES: "1000" })).toContain(
      "LOCAL_SOLANA_PUBSUB_MAX_BUFFERED_BYTES must be an integer from 65536",
    );
    expect(
      loadConfig({
        JUPITER_API_URL: "https://api.jup.ag/",
        PRICE_WATCHLIST:
          " So11111111111111111111111111111111111111112 ,So11111111111111111111111111111111111111112",
      }).prices,
    ).toMatchObject({
      jupiterUrl: "https://api.jup.ag",
      watchlist: ["So11111111111111111111111111111111111111112"],
    });
  });

  it("takes Pyth as a trigger price source only with its URL and feeds, naming what is missing, never echoing the URL", () => {
    const attempt = (env: Record<string, string>) => {
      try {
        loadConfig(env);
        return "";
      } catch (error) {
        return (error as Error).message;
      }
    };
    const feeds = `SOL:${"ab".repeat(32)}`;
    expect(attempt({ TRIGGER_PRICE_SOURCES: "pyth", PYTH_PRICE_FEEDS: feeds })).toContain(
      "TRIGGER_PRICE_SOURCES names pyth: PYTH_HERMES_URL is required",
    );
    const noFeeds = attempt({ TRIGGER_PRICE_SOURCES: "pyth", PYTH_HERMES_URL: "https://hermes.example.com" });
    expect(noFeeds).toContain("TRIGGER_PRICE_SOURCES names pyth: PYTH_PRICE_FEEDS is required");
    expect(noFeeds).not.toContain("PYTH_HERMES_URL");
    expect(attempt({ PYTH_HERMES_URL: "https://user:secret@hermes.example.com" })).not.toContain("secret");
    expect(attempt({ PYTH_PRICE_FEEDS: `NOPE:${"ab".repeat(32)}` })).toContain(
      "PYTH_PRICE_FEEDS names NOPE, which is not a catalog token",
    );
    // A URL and feeds alone do not make Pyth a source: TRIGGER_PRICE_SOURCES says which count.
    expect(
      loadConfig({ PYTH_HERMES_URL: "https://hermes.example.com", PYTH_PRICE_FEEDS: feeds }).triggers
        .priceSources,
    ).toEqual(["prices"]);
    expect(
      loadConfig({
        TRIGGER_PRICE_SOURCES: "pyth",
        PYTH_HERMES_URL: "http://127.0.0.1:9000",
        PYTH_PRICE_FEEDS: feeds,
      }).triggers.priceSources,
    ).toEqual(["pyth"]);
  });

  it("requires EXECUTOR_KEYPAIR and DELEGATE_SEED against a cluster, unless transfers are simulated", () => {
    const url = "https://api.mainnet-beta.solana.com";
    expect(() => loadConfig({ SOLANA_RPC_URL: url })).toThrow(
      /EXECUTOR_KEYPAIR is required when SOLANA_RPC_URL is set/,
    );
    expect(() => loadConfig({ SOLANA_RPC_URL: url, EXECUTOR_KEYPAIR: "/k.json" })).toThrow(
      /DELEGATE_SEED is required when SOLANA_RPC_URL is set/,
    );
    expect(
      loadConfig({ SOLANA_RPC_URL: url, EXECUTOR_KEYPAIR: "/k.json", DELEGATE_SEED: "/d.seed" }).transfers,
    ).toMatchObject({ keypairPath: "/k.json", delegateSeedPath: "/d.seed", approvalWaitMs: 72 * 3_600_000 });
    expect(loadConfig({ SOLANA_RPC_URL: url, TRANSFER_EXECUTOR: "simulated" }).transfers.keypairPath).toBe(
      undefined,
    );
    expect(() => loadConfig({ TRANSFER_EXECUTOR: "dry" })).toThrow(
      /TRANSFER_EXECUTOR must be chain or simulated/,
    );
  });

  it("requires API keys by default with MongoDB or in production, and not for the in-memory default", () => {
    expect(loadConfig({}).auth.mode).toBe("none");
    expect(loadConfig({ MONGODB_URI: "mongodb://db.example.com" }).auth.mode).toBe("apikey");
    expect(loadConfig({ NODE_ENV: "production" }).auth.mode).toBe("apikey");
    expect(loadConfig({ MONGODB_URI: "mongodb://db.example.com", AUTH_MODE: "none" }).auth.mode).toBe("none");
  });

  it("requires API keys against a cluster: without them every caller is one owner and could spend its approvals", () => {
    const cluster = {
      SOLANA_RPC_URL: "https://rpc.example.com",
      EXECUTOR_KEYPAIR: "/k.json",
      DELEGATE_SEED: "/d.seed",
    };
    expect(loadConfig(cluster).auth.mode).toBe("apikey");
    expect(() => loadConfig({ ...cluster, AUTH_MODE: "none" })).toThrow(
      /AUTH_MODE=none with SOLANA_RPC_URL .*ALLOW_ANONYMOUS_TRANSFERS=true/,
    );
    expect(loadConfig({ ...cluster, AUTH_MODE: "none", ALLOW_ANONYMOUS_TRANSFERS: "true" }).auth.mode).toBe(
      "none",
    );
    // Simulated transfers move nothing: no approval is at stake.
    expect(loadConfig({ ...cluster, AUTH_MODE: "none", TRANSFER_EXECUTOR: "simulated" }).auth.mode).toBe(
      "none",
    );
  });

  it("never echoes ADMIN_API_KEY when it is refused", () => {
    const secret = "short secret";
    expect(() => loadConfig({ ADMIN_API_KEY: secret })).toThrow(/ADMIN_API_KEY must be 32 to 256 characters/);
    try {
      loadConfig({ ADMIN_API_KEY: secret });
    } catch (error) {
      expect(String(error)).not.toContain(secret);
    }
  });

  it("takes empty and blank values for unset", () => {
    const blank = Object.fromEntries(
      Object.keys(CONFIG_VARIABLES).map((k, i) => [k, i % 2 === 0 ? "" : "  "]),
    );
    expect(loadConfig(blank)).toEqual(loadConfig({}));
  });

  it("reads every variable", () => {
    expect(
      loadConfig({
        HOST: "127.0.0.1",
        PORT: "0",
        LOG_LEVEL: "DEBUG",
        LOG_BUFFER_BYTES: "65536",
        CORS_ORIGINS: "https://app.example.com/, http://localhost:3000",
        MAX_REQUEST_BYTES: "1024",
        SHUTDOWN_TIMEOUT_MS: "0",
        MAX_CONNECTIONS: "50",
        HTTP2_MAX_CONCURRENT_STREAMS: "8",
        HEADERS_TIMEOUT_MS: "2000",
        REQUEST_TIMEOUT_MS: "4000",
        IDLE_TIMEOUT_MS: "9000",
        SCHEDULER_ENABLED: "false",
        LEAN_UNARY: "0",
        SCHEDULER_CONCURRENCY: "4",
        SCHEDULER_POLL_INTERVAL_MS: "250",
        SCHEDULER_LEASE_MS: "5000",
        SCHEDULER_ATTEMPT_TIMEOUT_MS: "3000",
        SCHEDULER_MAX_ATTEMPTS: "5",
        SCHEDULER_RETRY_BASE_MS: "10",
        SCHEDULER_RETRY_MAX_MS: "100",
        SCHEDULER_MAX_CONSECUTIVE_FAILURES: "2",
        PENDING_WATCH_MAX_ACCOUNTS: "50",
        SCHEDULE_TIME_SCALE: "3600",
        SIMULATED_FAILURE_RATE: "0.25",
        SIMULATED_HANG_RATE: ".1",
        SIMULATED_LATENCY_MS: "20",
        AUTH_MODE: "apikey",
        ADMIN_API_KEY: "k".repeat(40),
        AUTH_PUBLIC_TOKEN_READS: "true",
        AUTH_PUBLIC_REFLECTION: "false",
        RATE_LIMIT_READ_PER_SECOND: "7",
        RATE_LIMIT_READ_BURST: "8",
        RATE_LIMIT_WRITE_PER_SECOND: "3",
        RATE_LIMIT_WRITE_BURST: "4",
        RATE_LIMIT_ANONYMOUS_PER_SECOND: "1",
        RATE_LIMIT_ANONYMOUS_BURST: "5",
        MONGODB_URI: "mongodb://db.example.com:27017/agents",
        MONGODB_DB: "other",
        MONGODB_MAX_POOL_SIZE: "5",
        MONGODB_SERVER_SELECTION_TIMEOUT_MS: "500",
        MONGODB_CONNECT_TIMEOUT_MS: "700",
        MONGODB_SOCKET_TIMEOUT_MS: "0",
        MONGODB_OPERATION_TIMEOUT_MS: "1500",
        SOLANA_RPC_URL: "https://mainnet.helius-rpc.com/?api-key=secret",
        SOLANA_WS_URL: "wss://mainnet.helius-rpc.com/?api-key=secret",
        SOLANA_COMMITMENT: "Finalized",
        SOLANA_RPC_TIMEOUT_MS: "1500",
        SOLANA_RPC_MAX_CONCURRENCY: "4",
        SOLANA_RPC_MAX_QUEUED: "10",
        SOLANA_RPC_MAX_RETRIES: "0",
        SOLANA_RPC_RETRY_BASE_MS: "5",
        SOLANA_RPC_MAX_RETRY_WAIT_MS: "100",
        SOLANA_RPC_MAX_RESPONSE_BYTES: "2048",
        SOLANA_TRANSACTION_CACHE: "0",
        LOCAL_SOLANA_RPC_PORT: "0",
        LOCAL_SOLANA_STATE: "/var/lib/chain.bin",
        LOCAL_SOLANA_SLOT_MS: "50",
        LOCAL_SOLANA_MAX_ANSWER_BYTES: "1048576",
        LOCAL_SOLANA_MAX_REQUEST_MS: "750",
        LOCAL_SOLANA_WRITE_TIMEOUT_MS: "2500",
        LOCAL_SOLANA_MAX_CONNECTIONS: "16",
        LOCAL_SOLANA_MAX_IN_FLIGHT_PER_CONNECTION: "2",
        LOCAL_SOLANA_MAX_UNSENT_BYTES: "16777216",
        LOCAL_SOLANA_HISTORY: "5000",
        LOCAL_SOLANA_MAX_ACCOUNT_BYTES: "33554432",
        LOCAL_SOLANA_AIRDROPS_PER_SECOND: "3",
        LOCAL_SOLANA_AIRDROP_BURST: "9",
        LOCAL_SOLANA_CHEATCODES: "false",
        LOCAL_SOLANA_ALLOWED_HOSTS: "devbox.local,chain.test",
        LOCAL_SOLANA_ALLOWED_ORIGINS: "https://app.example, http://localhost:5173/",
        LOCAL_SOLANA_PUBSUB_MAX_CONNECTIONS: "12",
        LOCAL_SOLANA_PUBSUB_MAX_SUBSCRIPTIONS_PER_CONNECTION: "34",
        LOCAL_SOLANA_PUBSUB_MAX_SUBSCRIPTIONS: "3400",
        LOCAL_SOLANA_PUBSUB_MAX_SUBSCRIPTIONS_PER_ADDRESS: "340",
        LOCAL_SOLANA_PUBSUB_MAX_MESSAGE_BYTES: "4096",
        LOCAL_SOLANA_PUBSUB_MAX_BUFFERED_BYTES: "131072",
        TRANSFER_EXECUTOR: "Simulated",
        EXECUTOR_KEYPAIR: "/run/secrets/executor.json",
        DELEGATE_SEED: "/run/secrets/delegate.seed",
        APPROVAL_WAIT_HOURS: "5",
        ALLOW_ANONYMOUS_TRANSFERS: "true",
        TRANSFER_MAX_USD_PER_RUN: "25",
        TRANSFER_MAX_USD_PER_DAY: "100",
        TRANSFER_MAX_ACCOUNT_CREATIONS_PER_DAY: "3",
        EXECUTOR_MIN_LAMPORTS: "1000",
        JUPITER_API_URL: "https://api.jup.ag",
        JUPITER_API_KEY: "jup-key",
        PRICE_WATCHLIST: "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v",
        PRICE_TTL_MS: "1000",
        PRICE_MAX_STALE_MS: "60000",
        TOKEN_LIST_TTL_MS: "3600000",
        JUPITER_TIMEOUT_MS: "500",
        JUPITER_MAX_CONCURRENCY: "2",
        JUPITER_MAX_QUEUED: "3",
        JUPITER_MAX_RESPONSE_BYTES: "4096",
        JUPITER_MAX_TOKEN_LIST_BYTES: "8192",
        PRICE_CACHE_ENTRIES: "500",
        JUPITER_BREAKER_FAILURES: "2",
        JUPITER_BREAKER_OPEN_MS: "1500",
        JUPITER_SWAP_URL: "http://127.0.0.1:9000/swap/v2/",
        JUPITER_SWAP_TIMEOUT_MS: "700",
        JUPITER_SWAP_MAX_RESPONSE_BYTES: "2048",
        JUPITER_SWAP_MAX_CONCURRENCY: "3",
        JUPITER_SWAP_MAX_QUEUED: "0",
        SWAP_ALLOWED_PROGRAMS:
          "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA, ComputeBudget111111111111111111111111111111",
        SWAP_MAX_FEE_LAMPORTS: "50000",
        SWAP_MAX_PRICE_DEVIATION_BPS: "150",
        CATALOG_PRICE_TICK_MS: "2000",
        PRICE_WATCH_INTERVAL_MS: "500",
        TRIGGER_MAX_LIFETIME_MS: "86400000",
        TRIGGER_MIN_USD: "2.5",
        TRIGGER_CONFIRMATIONS: "3",
        TRIGGER_HOLD_MS: "1500",
        TRIGGER_REFRESH_MS: "2000",
        TRIGGER_MAX_WATCHED: "5000",
        TRIGGER_PRICE_SOURCES: "pyth, Prices",
        PYTH_HERMES_URL: "https://hermes.example.com/secret-token/hermes/",
        PYTH_PRICE_FEEDS: ` sol:0x${"Ab".repeat(32)}, JUP:${"0c".repeat(32)}`,
        STREAM_HEARTBEAT_MS: "5000",
        STREAM_MAX_PER_KEY: "7",
        STREAM_BUFFER_MESSAGES: "64",
        STREAM_WRITE_TIMEOUT_MS: "4000",
        EVENT_POLL_INTERVAL_MS: "100",
        EVENT_RETENTION_HOURS: "2",
        EVENT_REPAIR_INTERVAL_MS: "1000",
        EVENT_REPAIR_WINDOW_MS: "30000",
        WEBHOOKS_ENABLED: "false",
        WEBHOOK_ALLOW_HTTP: "true",
        WEBHOOK_ALLOW_PRIVATE_NETWORKS: "1",
        WEBHOOK_MAX_ENDPOINTS_PER_OWNER: "3",
        WEBHOOK_TIMEOUT_MS: "2000",
        WEBHOOK_CONCURRENCY: "5",
        WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT: "2",
        WEBHOOK_MAX_IN_FLIGHT_PER_OWNER: "3",
        WEBHOOK_CONNECT_TIMEOUT_MS: "700",
        WEBHOOK_POLL_INTERVAL_MS: "50",
        WEBHOOK_RETRY_BASE_MS: "100",
        WEBHOOK_RETRY_MAX_MS: "1000",
        WEBHOOK_RETRY_FOR_HOURS: "2",
        WEBHOOK_DISABLE_AFTER_HOURS: "6",
        WEBHOOK_SECRET_OVERLAP_HOURS: "1",
        WEBHOOK_DELIVERY_RETENTION_HOURS: "12",
        MAX_AGENTS_PER_OWNER: "5000",
        MAX_PENDING_PER_OWNER: "50",
      }),
    ).toEqual({
      host: "127.0.0.1",
      port: 0,
      logLevel: "debug",
      logBufferBytes: 65_536,
      corsOrigins: ["https://app.example.com", "http://localhost:3000"],
      maxRequestBytes: 1024,
      leanUnary: false,
      shutdownTimeoutMs: 0,
      http: {
        maxConnections: 50,
        maxConcurrentStreams: 8,
        headersTimeoutMs: 2000,
        requestTimeoutMs: 4000,
        idleTimeoutMs: 9000,
      },
      scheduler: {
        enabled: false,
        concurrency: 4,
        pollIntervalMs: 250,
        leaseMs: 5000,
        attemptTimeoutMs: 3000,
        maxAttempts: 5,
        retryBaseMs: 10,
        retryMaxMs: 100,
        maxConsecutiveFailures: 2,
        pendingWatchMaxAccounts: 50,
        timeScale: 3600,
        simulatedFailureRate: 0.25,
        simulatedHangRate: 0.1,
        simulatedLatencyMs: 20,
      },
      auth: {
        mode: "apikey",
        adminKey: "k".repeat(40),
        publicTokenReads: true,
        publicReflection: false,
        read: { rate: 7, burst: 8 },
        write: { rate: 3, burst: 4 },
        anonymous: { rate: 1, burst: 5 },
      },
      mongo: {
        uri: "mongodb://db.example.com:27017/agents",
        dbName: "other",
        maxPoolSize: 5,
        serverSelectionTimeoutMs: 500,
        connectTimeoutMs: 700,
        socketTimeoutMs: 0,
        operationTimeoutMs: 1500,
      },
      solana: {
        rpcUrl: "https://mainnet.helius-rpc.com/?api-key=secret",
        wsUrl: "wss://mainnet.helius-rpc.com/?api-key=secret",
        commitment: "finalized",
        timeoutMs: 1500,
        maxConcurrency: 4,
        maxQueued: 10,
        maxRetries: 0,
        retryBaseMs: 5,
        maxRetryWaitMs: 100,
        maxResponseBytes: 2048,
        transactionCache: 0,
        local: {
          port: 0,
          statePath: "/var/lib/chain.bin",
          slotMs: 50,
          limits: {
            maxAnswerBytes: 1_048_576,
            maxRequestMs: 750,
            writeTimeoutMs: 2500,
            maxConnections: 16,
            maxInFlightPerConnection: 2,
            maxUnsentBytes: 16_777_216,
          },
          history: 5000,
          maxAccountBytes: 33_554_432,
          airdropLimit: { rate: 3, burst: 9 },
          cheatcodes: false,
          allowedHosts: ["devbox.local", "chain.test"],
          allowedOrigins: ["https://app.example", "http://localhost:5173"],
          pubsub: {
            maxConnections: 12,
            maxSubscriptionsPerConnection: 34,
            maxSubscriptions: 3400,
            maxSubscriptionsPerAddress: 340,
            maxMessageBytes: 4096,
            maxBufferedBytes: 131_072,
          },
        },
      },
      transfers: {
        executor: "simulated",
        keypairPath: "/run/secrets/executor.json",
        delegateSeedPath: "/run/secrets/delegate.seed",
        approvalWaitMs: 5 * 3_600_000,
        maxUsdPerRun: 25,
        maxUsdPerDay: 100,
        maxAccountCreationsPerDay: 3,
        executorMinLamports: 1_000,
      },
      prices: {
        jupiterUrl: "https://api.jup.ag",
        jupiterApiKey: "jup-key",
        watchlist: ["EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v"],
        ttlMs: 1000,
        maxStaleMs: 60_000,
        tokenListTtlMs: 3_600_000,
        timeoutMs: 500,
        maxConcurrency: 2,
        maxQueued: 3,
        maxResponseBytes: 4096,
        maxTokenListBytes: 8192,
        cacheEntries: 500,
        breakerFailures: 2,
        breakerOpenMs: 1500,
        catalogTickMs: 2000,
        watchIntervalMs: 500,
        pythHermesUrl: "https://hermes.example.com/secret-token/hermes",
        pythFeeds: [
          { symbol: "SOL", feedId: "ab".repeat(32) },
          { symbol: "JUP", feedId: "0c".repeat(32) },
        ],
      },
      swaps: {
        jupiterSwapUrl: "http://127.0.0.1:9000/swap/v2",
        localRoutes: false,
        timeoutMs: 700,
        maxResponseBytes: 2048,
        maxConcurrency: 3,
        maxQueued: 0,
        allowedPrograms: [
          "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA",
          "ComputeBudget111111111111111111111111111111",
        ],
        maxFeeLamports: 50_000n,
        maxPriceDeviationBps: 150,
      },
      triggers: {
        maxLifetimeMs: 86_400_000,
        minUsd: 2.5,
        confirmations: 3,
        holdMs: 1500,
        refreshMs: 2000,
        maxWatched: 5000,
        priceSources: ["pyth", "prices"],
      },
      streams: {
        heartbeatMs: 5000,
        maxPerKey: 7,
        bufferMessages: 64,
        eventPollIntervalMs: 100,
        eventRetentionMs: 2 * 3_600_000,
        eventRepairIntervalMs: 1000,
        eventRepairWindowMs: 30_000,
        writeTimeoutMs: 4000,
      },
      agentCaps: { maxAgents: 5000, maxPending: 50 },
      webhooks: {
        enabled: false,
        allowHttp: true,
        allowPrivateNetworks: true,
        maxEndpointsPerOwner: 3,
        timeoutMs: 2000,
        concurrency: 5,
        maxInFlightPerEndpoint: 2,
        maxInFlightPerOwner: 3,
        connectTimeoutMs: 700,
        pollIntervalMs: 50,
        retryBaseMs: 100,
        retryMaxMs: 1000,
        retryForMs: 2 * 3_600_000,
        disableAfterMs: 6 * 3_600_000,
        secretOverlapMs: 3_600_000,
        deliveryRetentionMs: 12 * 3_600_000,
      },
    });
  });

  it("shows a Solana RPC URL by its origin only: providers put their key in the path, query or user info", () => {
    expect(redactRpcUrl("https://mainnet.helius-rpc.com/?api-key=secret")).toBe(
      "https://mainnet.helius-rpc.com",
    );
    expect(redactRpcUrl("https://example.rpcpool.com/secret-token")).toBe("https://example.rpcpool.com");
    expect(redactRpcUrl("https://user:secret@rpc.example.com:8443/x")).toBe("https://rpc.example.com:8443");
    // SOLANA_WS_URL is shown the same way.
    expect(redactRpcUrl("wss://mainnet.helius-rpc.com/?api-key=secret")).toBe("wss://mainnet.helius-rpc.com");
  });

  it("leaves the database name to the URI when MONGODB_DB is unset", () => {
    expect(
      loadConfig({ MONGODB_URI: "mongodb+srv://cluster.example.com/agents" }).mongo?.dbName,
    ).toBeUndefined();
  });

  it.each([
    ["PORT", "65536"],
    ["PORT", "1e3"],
    ["PORT", "80.5"],
    ["PORT", "-1"],
    ["LOG_LEVEL", "verbose"],
    ["MAX_REQUEST_BYTES", "1023"],
    ["MAX_REQUEST_BYTES", "-1"],
    ["SHUTDOWN_TIMEOUT_MS", "600001"],
    ["MAX_CONNECTIONS", "0"],
    ["HTTP2_MAX_CONCURRENT_STREAMS", "0"],
    ["HEADERS_TIMEOUT_MS", "99"],
    ["REQUEST_TIMEOUT_MS", "5000.5"],
    ["IDLE_TIMEOUT_MS", "x"],
    ["SCHEDULER_ENABLED", "yes"],
    ["LEAN_UNARY", "fast"],
    ["AUTH_MODE", "password"],
    ["AUTH_PUBLIC_TOKEN_READS", "maybe"],
    ["RATE_LIMIT_READ_PER_SECOND", "0"],
    ["RATE_LIMIT_WRITE_BURST", "x"],
    ["SCHEDULER_CONCURRENCY", "0"],
    ["SCHEDULE_TIME_SCALE", "0"],
    ["SIMULATED_FAILURE_RATE", "1.5"],
    ["SIMULATED_HANG_RATE", "-0.1"],
    ["MONGODB_URI", "mongodb://"],
    ["MONGODB_URI", "localhost:27017"],
    ["MONGODB_DB", "has space"],
    ["MONGODB_MAX_POOL_SIZE", "0"],
    ["MONGODB_SERVER_SELECTION_TIMEOUT_MS", "99"],
    ["MONGODB_CONNECT_TIMEOUT_MS", "x"],
    ["MONGODB_SOCKET_TIMEOUT_MS", "-5"],
    ["MONGODB_OPERATION_TIMEOUT_MS", "99"],
    ["CORS_ORIGINS", "https://ok.example.com,bad"],
    ["JUPITER_SWAP_URL", "ftp://jup.example.com"],
    ["JUPITER_SWAP_TIMEOUT_MS", "9"],
    ["JUPITER_SWAP_MAX_RESPONSE_BYTES", "1023"],
    ["JUPITER_SWAP_MAX_CONCURRENCY", "0"],
    ["SWAP_ALLOWED_PROGRAMS", ",,"],
    ["SWAP_ALLOWED_PROGRAMS", "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA,not-a-program"],
    ["SWAP_MAX_FEE_LAMPORTS", "1000000001"],
    ["SWAP_MAX_FEE_LAMPORTS", "-1"],
    ["SWAP_MAX_PRICE_DEVIATION_BPS", "10001"],
    ["TRIGGER_MIN_USD", "-1"],
    ["TRIGGER_CONFIRMATIONS", "0"],
    ["TRIGGER_PRICE_SOURCES", "chainlink"],
    ["TRIGGER_PRICE_SOURCES", "prices,,pyth"],
    // Pyth without PYTH_HERMES_URL and PYTH_PRICE_FEEDS.
    ["TRIGGER_PRICE_SOURCES", "prices,pyth"],
    ["PYTH_HERMES_URL", "ftp://hermes.example.com"],
    ["PYTH_HERMES_URL", "https://user:secret@hermes.example.com"],
    ["PYTH_HERMES_URL", "https://hermes.example.com/?key=secret"],
    ["PYTH_PRICE_FEEDS", "SOL"],
    ["PYTH_PRICE_FEEDS", `SOL:${"ab".repeat(31)}`],
    ["PYTH_PRICE_FEEDS", `SOL:0x${"xy".repeat(32)}`],
    ["PYTH_PRICE_FEEDS", `NOTATOKEN:${"ab".repeat(32)}`],
    ["PYTH_PRICE_FEEDS", `SOL:${"ab".repeat(32)},sol:${"cd".repeat(32)}`],
  ])("%s=%s is refused, by name", (name, value) => {
    expect(() => loadConfig({ [name]: value })).toThrow(ConfigError);
    expect(() => loadConfig({ [name]: value })).toThrow(name);
  });

  it.each([
    ["PORT", "0"],
    ["PORT", "65535"],
    ["MAX_REQUEST_BYTES", "1024"],
    ["MAX_REQUEST_BYTES", String(64 * 1024 * 1024)],
    ["CORS_ORIGINS", "*"],
    ["LOG_LEVEL", "silent"],
  ])("%s=%s is accepted", (name, value) => {
    expect(() => loadConfig({ [name]: value })).not.toThrow();
  });

  it("refuses a request timeout shorter than the headers timeout", () => {
    expect(() => loadConfig({ HEADERS_TIMEOUT_MS: "5000", REQUEST_TIMEOUT_MS: "4000" })).toThrow(
      /REQUEST_TIMEOUT_MS must be at least HEADERS_TIMEOUT_MS/,
    );
  });

  it("names every bad variable in one error", () => {
    let error: unknown;
    try {
      loadConfig({ PORT: "x", LOG_LEVEL: "y", MONGODB_MAX_POOL_SIZE: "0" });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const message = (error as Error).message;
    for (const name of ["PORT", "LOG_LEVEL", "MONGODB_MAX_POOL_SIZE"]) expect(message).toContain(name);
    expect(message.split("\n")).toHaveLength(1);
  });

  it("never echoes a MongoDB password in its error", () => {
    for (const env of [
      { MONGODB_URI: `mongodb//admin:${PASSWORD}@db.example.com/agents` },
      { MONGODB_URI: `http://admin:${PASSWORD}@db.example.com` },
      { MONGODB_URI: `admin:${PASSWORD}@db.example.com` },
      // A valid URI with a password, and another variable wrong.
      { MONGODB_URI: `mongodb://admin:${PASSWORD}@db.example.com/agents`, PORT: "x" },
    ]) {
      let message = "";
      try {
        loadConfig(env);
      } catch (e) {
        message = (e as Error).message;
      }
      expect(message, JSON.stringify(env)).not.toBe("");
      expect(message).not.toContain(PASSWORD);
    }
  });

  it("keeps a valid URI with a password as given, and redacts it for logs", () => {
    const uri = `mongodb://admin:${PASSWORD}@db.example.com:27017/agents?authSource=admin`;
    expect(loadConfig({ MONGODB_URI: uri }).mongo?.uri).toBe(uri);
    expect(redactUri(uri)).toBe("mongodb://admin:****@db.example.com:27017/agents?authSource=admin");
    expect(redactUri("mongodb://db.example.com/agents")).toBe("mongodb://db.example.com/agents");
  });
});

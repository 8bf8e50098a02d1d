import type { AddressInfo } from "node:net";
import type { RpcTransport } from "@solana/kit";
import { Registry } from "prom-client";
import { type AppContext, type AppContextOverrides, createAppContext } from "./app-context.ts";
import { createCachedChain } from "./chain/cached-chain.ts";
import type { Chain, TransferChain } from "./chain/chain.ts";
import { createDelegateKeys, type DelegateKeys } from "./chain/delegate-keys.ts";
import { generateDelegateSeed, loadDelegateSeed } from "./chain/delegate-seed.ts";
import type { SigningKey } from "./chain/ed25519-key.ts";
import { generateExecutorKey, loadExecutorKey } from "./chain/executor-key.ts";
import { createHttpTransport } from "./chain/http-transport.ts";
import { createKitChain } from "./chain/kit-chain.ts";
import { createLazyTransferChain } from "./chain/lazy-transfer-chain.ts";
import { createResilientTransport } from "./chain/resilient-transport.ts";
import { createSharedTransferChain } from "./chain/shared-transfer-chain.ts";
import { type Config, redactRpcUrl } from "./config.ts";
import type { EmbeddedLocalChain } from "./local-chain/local-chain-worker-host.ts";
import type { Logger } from "./logger.ts";
import { registerAgentCapMetrics } from "./observability/agent-cap-metrics.ts";
import { registerChainMetrics, registerLocalChainMetrics } from "./observability/chain-metrics.ts";
import { registerExecutorMetrics } from "./observability/executor-metrics.ts";
import { registerPendingWatchMetrics } from "./observability/pending-watch-metrics.ts";
import { createRateLimitedLog } from "./observability/rate-limited-log.ts";
import { registerSwapMetrics } from "./observability/swap-metrics.ts";
import { registerUpstreamMetrics, type UpstreamMetrics } from "./observability/upstream-metrics.ts";
import { registerWebhookMetrics } from "./observability/webhook-metrics.ts";
import { agentEventJson } from "./rpc/agent-service.ts";
import { createPendingAccountWatch, type PendingAccountWatch } from "./scheduler/pending-account-watch.ts";
import type { Scheduler } from "./scheduler/scheduler.ts";
import { createServiceScheduler } from "./scheduler/service-scheduler.ts";
import { type BuildOptions, build, type Server } from "./server.ts";
import { type Catalog, catalogSymbolLookup, loadCatalog } from "./token/catalog.ts";
import { createCatalogPriceSource } from "./token/catalog-price-source.ts";
import { createCatalogTokenList } from "./token/catalog-token-list.ts";
import { createJupiterApi } from "./token/jupiter-api.ts";
import { createJupiterPriceSource } from "./token/jupiter-price-source.ts";
import { createJupiterSwapApi } from "./token/jupiter-swap-api.ts";
import { createJupiterTokenList } from "./token/jupiter-token-list.ts";
import { jupiterRouteNotice, localRouteNotice, type SwapRouteNotice } from "./token/swap-route-notice.ts";
import type { PriceSource, TokenList } from "./token/token-source.ts";
import { createJsonUpstream } from "./upstream/json-upstream.ts";
import type { Resolve } from "./webhooks/http-webhook-sender.ts";
import type { WebhookLoop } from "./webhooks/webhook-loop.ts";
import { createWebhookPipeline } from "./webhooks/webhook-pipeline.ts";

/** The whole service of one process: its chain, its context, its scheduler and its server. */
export interface Service {
  readonly context: AppContext;
  readonly server: Server;
  /** The embedded local chain, when this process runs it (no SOLANA_RPC_URL). */
  readonly localChain: EmbeddedLocalChain | undefined;
  readonly scheduler: Scheduler | undefined;
  /** Webhook deliveries from the outbox (WEBHOOKS_ENABLED). */
  readonly webhooks: WebhookLoop | undefined;
  /** The Prometheus registry /metrics serves. */
  readonly registry: Registry;
  /** Listens on the configured port, then starts the scheduler. */
  listen(): Promise<AddressInfo>;
  /** Drains calls and runs (within the shutdown timeout), then releases the stores and the chain. */
  close(): Promise<void>;
}

export interface ServiceOverrides extends AppContextOverrides {
  /** A chain to read instead of the configured one (tests inject faults through it). */
  readonly chain?: Chain;
  /** How webhook hosts resolve (tests point a name at an address); the system resolver by default. */
  readonly webhookResolve?: Resolve;
}

/** Mints and metadata kept in memory, and for how long they are trusted. */
const CACHED_ACCOUNTS = 1000;
const ACCOUNT_TTL_MS = 60_000;

/**
 * Composes the process, in order: the configuration (given), the chain (a cluster through
 * SOLANA_RPC_URL, or the embedded local chain started here), the context built on it (token
 * sources, stores, executor), the scheduler, and the server. `main.ts` and the tests both build
 * the service through here, so what runs in tests is what runs in production.
 */
export async function createService(
  config: Config,
  logger: Logger,
  overrides: ServiceOverrides = {},
  buildOptions: BuildOptions = {},
): Promise<Service> {
  const registry = new Registry();
  const catalog = loadCatalog();
  const made = await createChain(config, logger, registry);
  const { transfers, localChain } = made;
  const chain = overrides.chain ?? made.chain;
  let context: AppContext;
  let swapRoutes: SwapRouteNotice;
  const webhookMetrics = registerWebhookMetrics(registry);
  try {
    const executorKey = await executorKeyOf(config, logger, localChain);
    const delegates = await delegateKeysOf(config, logger);
    const upstreamMetrics = registerUpstreamMetrics(registry);
    const { prices, tokenList } = createPriceSources(config, logger, catalog, upstreamMetrics);
    swapRoutes = await createSwapRoutes(config, logger, catalog, localChain, upstreamMetrics);
    const swaps = swapRoutes.api;
    context = await createAppContext(
      config,
      logger,
      {
        chain,
        catalog,
        transfers,
        executorKey,
        delegates,
        prices,
        tokenList,
        swaps,
        swapNotice: swapRoutes.notice,
        onSwapRefused: registerSwapMetrics(registry),
        onAgentCapReached: registerAgentCapMetrics(registry),
        onWebhookUrlRefused: webhookMetrics.refusedAtRegistration,
      },
      overrides,
    );
  } catch (error) {
    await localChain?.close();
    throw error;
  }
  if (context.executorBalance !== undefined) registerExecutorMetrics(registry, context.executorBalance);
  const canonicalSymbol = catalogSymbolLookup(catalog);
  /** Set once the scheduler it follows exists (see createServicePendingWatch). */
  let pendingWatch: PendingAccountWatch | undefined;
  const scheduler = config.scheduler.enabled
    ? createServiceScheduler({
        settings: config.scheduler,
        logger,
        agents: context.agentStore,
        runs: context.runStore,
        executor: context.executor,
        clock: context.scheduleClock,
        canonicalSymbol: async (symbol) => canonicalSymbol(symbol),
        registry,
        events: context.events,
        checkClaims: context.checkClaims,
        onPendingChanged: () => pendingWatch?.refresh(),
        ...(context.awaitReady === undefined
          ? {}
          : { awaitReady: context.awaitReady, readyWaitMs: config.transfers.approvalWaitMs }),
      })
    : undefined;
  if (scheduler !== undefined) context.onAgentCreated((agent) => scheduler.notePending(agent));
  pendingWatch =
    scheduler === undefined
      ? undefined
      : createServicePendingWatch(config, logger, registry, context, scheduler, localChain);
  const server = build(context, { ...buildOptions, metricsRegistry: registry });
  const webhooks = config.webhooks.enabled
    ? createWebhookPipeline({
        settings: config.webhooks,
        store: context.webhookStore,
        log: context.events,
        render: agentEventJson,
        metrics: webhookMetrics,
        logger,
        ...(overrides.webhookResolve === undefined ? {} : { resolve: overrides.webhookResolve }),
      })
    : undefined;
  // Events past EVENT_RETENTION_HOURS go (every replica prunes; deleting twice is harmless).
  const pruneEvents = () => {
    const before = new Date(Date.now() - config.streams.eventRetentionMs);
    context.events
      .prune(before)
      .catch((error: unknown) => logger.warn({ err: error }, "pruning agent events failed"));
  };
  let pruning: NodeJS.Timeout | undefined;
  // Changes whose event never made it (a failed append, a process killed in between) are
  // announced by every replica's repair; keys make a second announcement the first.
  const repairLog = createRateLimitedLog({ logger, level: "warn", perSecond: 1 });
  let repairing: Promise<void> | undefined;
  const repairEvents = (windowMs: number) => {
    if (context.eventRepair === undefined || repairing !== undefined) return;
    repairing = context.eventRepair
      .repair(new Date(Date.now() - windowMs))
      .then(
        (appended) => {
          if (appended > 0) logger.warn({ appended }, "announced agent changes whose events were missing");
        },
        (error: unknown) =>
          repairLog(
            { err: error instanceof Error ? error.message : String(error) },
            "repairing agent events failed",
          ),
      )
      .finally(() => {
        repairing = undefined;
      });
  };
  let repairTimer: NodeJS.Timeout | undefined;
  return {
    context,
    server,
    localChain,
    scheduler,
    webhooks,
    registry,
    async listen() {
      const address = await server.listen();
      context.executorBalance?.start();
      void swapRoutes.probe();
      scheduler?.start();
      webhooks?.start();
      pruneEvents();
      pruning = setInterval(pruneEvents, EVENT_PRUNE_INTERVAL_MS).unref();
      // The first sweep covers every kept event's time (all replicas may have been down).
      repairEvents(config.streams.eventRetentionMs);
      repairTimer = setInterval(
        () => repairEvents(config.streams.eventRepairWindowMs),
        config.streams.eventRepairIntervalMs,
      ).unref();
      return address;
    },
    async close() {
      clearInterval(pruning);
      clearInterval(repairTimer);
      // The scheduler stops claiming at once and finishes (or releases) its runs while calls drain.
      await Promise.all([
        server.close(),
        scheduler?.stop(config.shutdownTimeoutMs),
        webhooks?.stop(config.shutdownTimeoutMs),
        pendingWatch?.close(),
      ]);
      await repairing;
      await context.destroy();
      await localChain?.close();
    },
  };
}

/**
 * The watch of pending agents' token accounts (pending-account-watch.ts), on SOLANA_WS_URL or the
 * embedded chain's PubSub port; none without a PubSub endpoint (a cluster without SOLANA_WS_URL),
 * with PENDING_WATCH_MAX_ACCOUNTS=0, or when runs move nothing real (no approval to wait for).
 */
function createServicePendingWatch(
  config: Config,
  logger: Logger,
  registry: Registry,
  context: AppContext,
  scheduler: Scheduler,
  localChain: EmbeddedLocalChain | undefined,
): PendingAccountWatch | undefined {
  const check = context.awaitReady;
  const url =
    config.solana.wsUrl ??
    // The embedded chain's own path for the service: outside its clients' subscription caps.
    (config.solana.rpcUrl === undefined ? localChain?.pubsub?.serviceUrl : undefined);
  const maxAccounts = config.scheduler.pendingWatchMaxAccounts;
  // Simulated runs wait for no approval: nothing to watch.
  if (check === undefined) return undefined;
  if (url === undefined || maxAccounts === 0) {
    logger.info(
      { max_accounts: maxAccounts },
      url === undefined
        ? "pending agents are activated by the poll alone: set SOLANA_WS_URL to watch their accounts on the cluster's PubSub"
        : "pending agents are activated by the poll alone (PENDING_WATCH_MAX_ACCOUNTS=0)",
    );
    return undefined;
  }
  const metrics = registerPendingWatchMetrics(registry);
  const warn = createRateLimitedLog({ logger, level: "warn", perSecond: 1 });
  logger.info(
    { solana_pubsub: redactRpcUrl(url), max_accounts: maxAccounts },
    "pending agents' token accounts are watched (accountSubscribe): an approval activates its agent as it lands",
  );
  return createPendingAccountWatch({
    url,
    maxAccounts,
    commitment: config.solana.commitment,
    pending: () => scheduler.pendingByOwner(),
    accountOf: (agent) => check.accountOf(agent),
    onChange: (agentIds, cause) => scheduler.checkSoon(agentIds, cause),
    events: {
      ...metrics,
      onDisconnected(delayMs, reason) {
        metrics.onDisconnected(delayMs, reason);
        warn(
          { solana_pubsub: redactRpcUrl(url), reason, retry_in_ms: delayMs },
          "the watch of pending agents' accounts lost its PubSub socket: the poll activates them meanwhile",
        );
      },
      onReconnected() {
        metrics.onReconnected();
        logger.info({ solana_pubsub: redactRpcUrl(url) }, "the watch of pending agents' accounts is back");
      },
      onRefused(message) {
        metrics.onRefused(message);
        warn({ reason: message }, "the PubSub endpoint refused a watch of a pending agent's account");
      },
    },
  });
}

/** How often old agent events are pruned. */
const EVENT_PRUNE_INTERVAL_MS = 10 * 60_000;

/**
 * The chain adapter on its transport: HTTP to SOLANA_RPC_URL, or the embedded local chain (loaded
 * only then: LiteSVM and its state weigh some 100 MB), wrapped with bounded concurrency, retries
 * and metrics, and cached where the chain does not change.
 */
async function createChain(
  config: Config,
  logger: Logger,
  registry: Registry,
): Promise<{ chain: Chain; transfers: TransferChain; localChain: EmbeddedLocalChain | undefined }> {
  const solana = config.solana;
  let transport: RpcTransport;
  let localChain: EmbeddedLocalChain | undefined;
  if (solana.rpcUrl !== undefined) {
    transport = createHttpTransport({
      url: solana.rpcUrl,
      timeoutMs: solana.timeoutMs,
      maxResponseBytes: solana.maxResponseBytes,
    });
    logger.info(
      { solana_rpc: redactRpcUrl(solana.rpcUrl), commitment: solana.commitment },
      "token data comes from the Solana cluster at SOLANA_RPC_URL",
    );
  } else {
    localChain = await startEmbeddedChain(config, logger, registry);
    transport = localChain.transport;
  }
  // One transport for reads and writes: one bound on what the service asks of the cluster.
  const resilient = createResilientTransport({
    transport,
    maxConcurrency: solana.maxConcurrency,
    maxQueued: solana.maxQueued,
    maxRetries: solana.maxRetries,
    retryBaseMs: solana.retryBaseMs,
    maxRetryWaitMs: solana.maxRetryWaitMs,
    onRequest: registerChainMetrics(registry),
  });
  const kit = createKitChain({ transport: resilient, commitment: solana.commitment });
  // One blockhash, one block height and one status call serve every run in flight at a time.
  const transfers = createSharedTransferChain(
    createLazyTransferChain(async () =>
      (await import("./chain/kit-transfer-chain.ts")).createKitTransferChain({
        transport: resilient,
        commitment: solana.commitment,
      }),
    ),
  );
  const chain = createCachedChain({
    chain: kit,
    maxTransactions: solana.transactionCache,
    maxAccounts: CACHED_ACCOUNTS,
    accountTtlMs: ACCOUNT_TTL_MS,
  });
  return { chain, transfers, localChain };
}

/**
 * Where swap runs get their routes: Jupiter's Swap API at JUPITER_SWAP_URL, or, on the embedded
 * chain with JUPITER_SWAP_URL unset, the chain's local pools served in-process (never against a
 * cluster). Either way the executor gets the same port and the same checked answers.
 */
async function createSwapRoutes(
  config: Config,
  logger: Logger,
  catalog: Catalog,
  localChain: EmbeddedLocalChain | undefined,
  upstreamMetrics: UpstreamMetrics,
): Promise<SwapRouteNotice> {
  if (config.swaps.localRoutes === true && localChain !== undefined) {
    const [{ createLocalSwapApi }, { localPools }] = await Promise.all([
      import("./local-chain/local-swap-api.ts"),
      import("./local-chain/local-pools.ts"),
    ]);
    const pools = await localPools(catalog);
    logger.info(
      { pools: pools.length },
      "swap routes come from local pools on the embedded development chain, not Jupiter (set JUPITER_SWAP_URL to use a Swap API)",
    );
    return localRouteNotice(createLocalSwapApi({ transport: localChain.transport, pools }));
  }
  const api = createJupiterSwapApi({
    baseUrl: config.swaps.jupiterSwapUrl,
    ...(config.prices.jupiterApiKey === undefined ? {} : { apiKey: config.prices.jupiterApiKey }),
    timeoutMs: config.swaps.timeoutMs,
    maxBytes: config.swaps.maxResponseBytes,
    maxConcurrency: config.swaps.maxConcurrency,
    maxQueued: config.swaps.maxQueued,
    onCall: upstreamMetrics.onCall("jupiter_swap"),
    onCircuit: upstreamMetrics.onCircuit("jupiter_swap"),
  });
  return jupiterRouteNotice(api, config.swaps.jupiterSwapUrl);
}

/** How long a 429 without Retry-After leaves Jupiter alone. */
const JUPITER_DEFAULT_RETRY_AFTER_MS = 1000;

/**
 * Prices and the token list: Jupiter's when JUPITER_API_URL is set (one HTTP upstream, its
 * failures counted and logged at most a few lines a second), else the embedded catalog's.
 */
function createPriceSources(
  config: Config,
  logger: Logger,
  catalog: Catalog,
  metrics: UpstreamMetrics,
): { prices: PriceSource; tokenList: TokenList } {
  const settings = config.prices;
  const watchlist = settings.watchlist ?? catalog.tokens.map((t) => t.mint);
  if (settings.jupiterUrl === undefined) {
    return {
      prices: createCatalogPriceSource({ catalog, watchlist, tickMs: config.prices.catalogTickMs }),
      tokenList: createCatalogTokenList({ catalog }),
    };
  }
  const failureLog = createRateLimitedLog({ logger, level: "warn", perSecond: 2 });
  const counted = metrics.onCall("jupiter");
  const upstream = createJsonUpstream({
    name: "Jupiter",
    baseUrl: settings.jupiterUrl,
    headers: settings.jupiterApiKey === undefined ? {} : { "x-api-key": settings.jupiterApiKey },
    timeoutMs: settings.timeoutMs,
    maxConcurrency: settings.maxConcurrency,
    maxQueued: settings.maxQueued,
    breaker: { failures: settings.breakerFailures, openMs: settings.breakerOpenMs },
    defaultRetryAfterMs: JUPITER_DEFAULT_RETRY_AFTER_MS,
    onCall(endpoint, outcome, seconds) {
      counted(endpoint, outcome, seconds);
      if (outcome !== "ok")
        failureLog({ upstream: "jupiter", endpoint, outcome }, "a Jupiter request failed");
    },
    onCircuit(position) {
      metrics.onCircuit("jupiter")(position);
      logger.warn(
        { upstream: "jupiter", circuit: position },
        `Jupiter's circuit breaker is ${position.replace("_", "-")}`,
      );
    },
  });
  const api = createJupiterApi({
    upstream,
    maxResponseBytes: settings.maxResponseBytes,
    maxTokenListBytes: settings.maxTokenListBytes,
  });
  const tokenList = createJupiterTokenList({
    api,
    ttlMs: settings.tokenListTtlMs,
    max: settings.cacheEntries,
    onLookup: metrics.onLookup("token_list"),
  });
  const prices = createJupiterPriceSource({
    api,
    tokenList,
    fallbackSymbols: new Map(catalog.tokens.map((t) => [t.mint, t.symbol])),
    watchlist,
    ttlMs: settings.ttlMs,
    maxStaleMs: settings.maxStaleMs,
    max: settings.cacheEntries,
    onLookup: metrics.onLookup("price"),
  });
  logger.info(
    { jupiter: redactRpcUrl(settings.jupiterUrl), watchlist: watchlist.length },
    "prices and the token list come from Jupiter at JUPITER_API_URL",
  );
  return { prices, tokenList };
}

/** What the embedded chain's faucet gives a key it made: fees and rent for a long while. */
const EMBEDDED_EXECUTOR_LAMPORTS = 1_000n * 1_000_000_000n;

/**
 * The executor's key: EXECUTOR_KEYPAIR's file, or, with none given, one made now (funded by the
 * embedded chain's faucet; against a cluster the configuration already refused this unless
 * transfers are simulated). Only its address is ever logged.
 */
async function executorKeyOf(
  config: Config,
  logger: Logger,
  localChain: EmbeddedLocalChain | undefined,
): Promise<SigningKey> {
  const path = config.transfers.keypairPath;
  if (path !== undefined) {
    const key = await loadExecutorKey(path);
    logger.info({ executor: key.address }, "the executor's key comes from EXECUTOR_KEYPAIR");
    return key;
  }
  const key = generateExecutorKey();
  if (localChain !== undefined) {
    // An airdrop the faucet cannot pay never lands (an emptied faucet in a saved state, say): the
    // log says what happened, not what was meant to.
    const err = await localChain.airdrop(key.address, EMBEDDED_EXECUTOR_LAMPORTS);
    if (err === null) {
      logger.info(
        { executor: key.address, lamports: EMBEDDED_EXECUTOR_LAMPORTS },
        "the executor's key was made for this run and funded by the embedded chain (set EXECUTOR_KEYPAIR to keep one)",
      );
    } else {
      logger.error(
        { executor: key.address, err },
        `the executor's key was made for this run, and the embedded chain's faucet could not fund it: runs cannot pay their fees until ${key.address} is funded (requestAirdrop, or surfnet_setAccount)`,
      );
    }
  } else {
    logger.warn(
      { executor: key.address },
      "the executor's key was made for this run: transfers are simulated",
    );
  }
  return key;
}

/**
 * The delegates' master secret: DELEGATE_SEED's file, or, with none given, one made now (against a
 * cluster with real transfers the configuration already refused that). Never logged; the secret is
 * wiped here once the delegates hold their own copy.
 */
async function delegateKeysOf(config: Config, logger: Logger): Promise<DelegateKeys> {
  const path = config.transfers.delegateSeedPath;
  const secret = path === undefined ? generateDelegateSeed() : await loadDelegateSeed(path);
  const delegates = createDelegateKeys({ secret });
  secret.fill(0);
  if (path === undefined) {
    logger.info(
      "the delegates' secret was made for this run: approvals last until restart (set DELEGATE_SEED to keep them)",
    );
  } else {
    logger.info("the delegates' secret comes from DELEGATE_SEED: one delegate per owner and wallet");
  }
  return delegates;
}

async function startEmbeddedChain(
  config: Config,
  logger: Logger,
  registry: Registry,
): Promise<EmbeddedLocalChain> {
  const [{ startLocalChainWorker }, { LOCAL_CHAIN_METHODS }] = await Promise.all([
    import("./local-chain/local-chain-worker-host.ts"),
    import("./local-chain/rpc-methods.ts"),
  ]);
  const local = config.solana.local;
  const metrics = registerLocalChainMetrics(registry, LOCAL_CHAIN_METHODS);
  let running: EmbeddedLocalChain;
  try {
    // The chain runs in a worker thread of its own: nothing its clients ask holds this event loop.
    running = await startLocalChainWorker({
      port: local.port,
      statePath: local.statePath,
      slotMs: local.slotMs,
      limits: local.limits,
      pubsubLimits: local.pubsub,
      cheatcodes: local.cheatcodes,
      history: local.history,
      airdropLimit: local.airdropLimit,
      allowedHosts: local.allowedHosts,
      timeoutMs: config.solana.timeoutMs,
      log: (level, message, fields) => logger[level](fields ?? {}, message),
      onRequest: metrics.onRequest,
      onRejected: metrics.onRejected,
      onSaved: metrics.onSaved,
    });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EADDRINUSE") {
      throw new LocalChainPortInUseError(local.port);
    }
    throw error;
  }
  logger.info(
    {
      solana_rpc: running.url,
      solana_pubsub: running.pubsub?.url,
      state: local.statePath ?? null,
      cheatcodes: local.cheatcodes,
    },
    `the embedded local chain serves Solana JSON-RPC at ${running.url}`,
  );
  return running;
}

/** The local chain's port is taken (another local chain, a test validator): a clear message. */
export class LocalChainPortInUseError extends Error {
  override readonly name = "LocalChainPortInUseError";
  constructor(port: number) {
    super(
      `LOCAL_SOLANA_RPC_PORT ${port} is in use on 127.0.0.1 (or the PubSub port after it, ${port + 1}): set SOLANA_RPC_URL=http://127.0.0.1:${port} to use the chain already serving there, or LOCAL_SOLANA_RPC_PORT to another port`,
    );
  }
}

import type { AddressInfo } from "node:net";
import { Registry } from "prom-client";
import { type AppContext, type AppContextOverrides, createAppContext } from "./app-context.ts";
import type { Chain } from "./chain/chain.ts";
import type { Config } from "./config.ts";
import type { TriggerWatch } from "./kinds/trigger/trigger-watch.ts";
import type { EmbeddedLocalChain } from "./local-chain/index.ts";
import type { Logger } from "./logger.ts";
import { registerAgentCapMetrics } from "./observability/agent-cap-metrics.ts";
import { registerExecutorMetrics, registerExecutorRentMetrics } from "./observability/executor-metrics.ts";
import { registerSwapMetrics } from "./observability/swap-metrics.ts";
import { registerUpstreamMetrics } from "./observability/upstream-metrics.ts";
import { registerWebhookMetrics } from "./observability/webhook-metrics.ts";
import { agentEventJson } from "./rpc/agent-service.ts";
import type { PendingAccountWatch } from "./scheduler/pending-account-watch.ts";
import type { Scheduler } from "./scheduler/scheduler.ts";
import { createServiceScheduler } from "./scheduler/service-scheduler.ts";
import { type BuildOptions, build, type Server } from "./server.ts";
import { createChain } from "./service/service-chain.ts";
import { createEventUpkeep } from "./service/service-event-upkeep.ts";
import { delegateKeysOf, executorKeyOf } from "./service/service-keys.ts";
import { createServicePendingWatch } from "./service/service-pending-watch.ts";
import { createPriceSources, createSwapRoutes } from "./service/service-token-sources.ts";
import { createServiceTriggerWatch } from "./service/service-trigger-watch.ts";
import { catalogSymbolLookup, loadCatalog } from "./token/catalog.ts";
import type { SwapRouteNotice } from "./token/swap-route-notice.ts";
import type { Resolve } from "./webhooks/http-webhook-sender.ts";
import type { WebhookLoop } from "./webhooks/webhook-loop.ts";
import { createWebhookPipeline } from "./webhooks/webhook-pipeline.ts";

export { LocalChainPortInUseError } from "./service/service-chain.ts";

/** The whole service of one process: its chain, its context, its scheduler and its server. */
export interface Service {
  readonly context: AppContext;
  readonly server: Server;
  /** The embedded local chain, when this process runs it (no SOLANA_RPC_URL). */
  readonly localChain: EmbeddedLocalChain | undefined;
  readonly scheduler: Scheduler | undefined;
  /** This replica's watch of open trigger orders' prices (with the scheduler). */
  readonly triggerWatch: TriggerWatch | undefined;
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
  const upstreamMetrics = registerUpstreamMetrics(registry);
  try {
    const executorKey = await executorKeyOf(config, logger, localChain);
    const delegates = await delegateKeysOf(config, logger);
    const { prices, tokenList } = await createPriceSources(
      config,
      logger,
      catalog,
      upstreamMetrics,
      localChain,
    );
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
        onRentSpent: registerExecutorRentMetrics(registry),
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
        kinds: context.kinds,
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
  const triggerWatch =
    scheduler === undefined
      ? undefined
      : createServiceTriggerWatch(config, logger, registry, context, scheduler, upstreamMetrics);
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
  const upkeep = createEventUpkeep({ config, logger, context });
  return {
    context,
    server,
    localChain,
    scheduler,
    triggerWatch,
    webhooks,
    registry,
    async listen() {
      const address = await server.listen();
      context.executorBalance?.start();
      void swapRoutes.probe();
      scheduler?.start();
      triggerWatch?.start();
      webhooks?.start();
      upkeep.start();
      return address;
    },
    async close() {
      upkeep.stop();
      // The scheduler stops claiming at once and finishes (or releases) its runs while calls drain.
      await Promise.all([
        server.close(),
        scheduler?.stop(config.shutdownTimeoutMs),
        triggerWatch?.stop(),
        webhooks?.stop(config.shutdownTimeoutMs),
        pendingWatch?.close(),
      ]);
      await upkeep.idle();
      await context.destroy();
      await localChain?.close();
    },
  };
}

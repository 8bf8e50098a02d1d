import type { Registry } from "prom-client";
import type { AppContext } from "../app-context.ts";
import { type Config, redactRpcUrl } from "../config.ts";
import type { EmbeddedLocalChain } from "../local-chain/index.ts";
import type { Logger } from "../logger.ts";
import { registerPendingWatchMetrics } from "../observability/pending-watch-metrics.ts";
import { createRateLimitedLog } from "../observability/rate-limited-log.ts";
import { createPendingAccountWatch, type PendingAccountWatch } from "../scheduler/pending-account-watch.ts";
import type { Scheduler } from "../scheduler/scheduler.ts";

/**
 * The watch of pending agents' token accounts (pending-account-watch.ts), on SOLANA_WS_URL or the
 * embedded chain's PubSub port; none without a PubSub endpoint (a cluster without SOLANA_WS_URL),
 * with PENDING_WATCH_MAX_ACCOUNTS=0, or when runs move nothing real (no approval to wait for).
 */
export function createServicePendingWatch(
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

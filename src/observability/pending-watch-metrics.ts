import { Counter, Gauge, type Registry } from "prom-client";
import type { PendingWatchEvents } from "../scheduler/pending-account-watch.ts";

/**
 * The watch of pending agents' token accounts (pending-account-watch.ts) on the server's registry:
 * `agent_pending_watch_accounts` (subscribed now), `agent_pending_watch_unwatched` (pending agents
 * past PENDING_WATCH_MAX_ACCOUNTS, left to the poll), `agent_pending_watch_connected` (0 or 1),
 * notifications heard, disconnections (each followed by a reconnection after a backoff) and
 * subscriptions the endpoint refused. A watch that stays disconnected costs latency, not
 * activations: the poll goes on.
 */
export function registerPendingWatchMetrics(registry: Registry): Required<PendingWatchEvents> {
  const accounts = new Gauge({
    name: "agent_pending_watch_accounts",
    help: "Token accounts of pending agents subscribed to (accountSubscribe) now.",
    registers: [registry],
  });
  const unwatched = new Gauge({
    name: "agent_pending_watch_unwatched",
    help: "Pending agents known to this replica whose account is not watched (past the bound): the poll checks them.",
    registers: [registry],
  });
  const connected = new Gauge({
    name: "agent_pending_watch_connected",
    help: "1 while the watch's PubSub socket is open, else 0.",
    registers: [registry],
  });
  const notifications = new Counter({
    name: "agent_pending_watch_notifications_total",
    help: "Changes of watched pending agents' token accounts heard (each checks its agents at once).",
    registers: [registry],
  });
  const disconnections = new Counter({
    name: "agent_pending_watch_disconnections_total",
    help: "Times the watch's PubSub socket closed or failed to open (it reconnects after a backoff).",
    registers: [registry],
  });
  const reconnections = new Counter({
    name: "agent_pending_watch_reconnections_total",
    help: "Times the watch's PubSub socket opened again after a disconnection (and subscribed again).",
    registers: [registry],
  });
  const refused = new Counter({
    name: "agent_pending_watch_refused_total",
    help: "Subscriptions the PubSub endpoint refused (its own bound, say): their agents are left to the poll.",
    registers: [registry],
  });
  return {
    onWatched(count, left) {
      accounts.set(count);
      unwatched.set(left);
    },
    onNotification: () => notifications.inc(),
    onDisconnected() {
      connected.set(0);
      disconnections.inc();
    },
    onReconnected: () => reconnections.inc(),
    onRefused: () => refused.inc(),
    onConnected: () => connected.set(1),
  };
}

import WebSocket from "ws";
import type { AgentRecord } from "../agent/agent-store.ts";
import { retryDelayMs } from "../domain/backoff.ts";

/** What the watch tells of itself (the service counts it in metrics). */
export interface PendingWatchEvents {
  /** Accounts subscribed now (answered by the endpoint), and pending agents left to the poll alone. */
  onWatched?(accounts: number, unwatched: number): void;
  /** The socket opened (the first time, or again). */
  onConnected?(): void;
  /** An account of a pending agent changed. */
  onNotification?(): void;
  /** The socket closed or could not open; the watch reconnects after `delayMs`. */
  onDisconnected?(delayMs: number, reason: string): void;
  /** The socket is open again after a disconnection: every account is subscribed again. */
  onReconnected?(): void;
  /** The endpoint refused a subscription (past its own bound, say): that agent is left to the poll. */
  onRefused?(message: string): void;
}

export interface PendingAccountWatchOptions {
  /** The PubSub endpoint (ws:// or wss://). Never logged whole: it may carry an API key. */
  readonly url: string;
  /** Accounts subscribed at most. */
  readonly maxAccounts: number;
  /** The commitment of the notifications: that of the readiness check's reads, so a check sees the change. */
  readonly commitment: string;
  /** The pending agents known now, one list per owner. */
  readonly pending: () => Iterable<readonly AgentRecord[]>;
  /** The token account whose change may make `agent` ready; undefined when it has none. */
  readonly accountOf: (agent: AgentRecord) => Promise<string | undefined>;
  /**
   * These agents' account changed (or was subscribed anew: a change may have been missed
   * meanwhile). `cause` names the change the same way in every replica that hears of it (the slot
   * it landed in), so that they claim one check of it.
   */
  readonly onChange: (agentIds: readonly string[], cause: string) => void;
  readonly events?: PendingWatchEvents;
  /** Reconnection backoff: exponential from `retryBaseMs` to `retryMaxMs`, jittered. */
  readonly retryBaseMs?: number;
  readonly retryMaxMs?: number;
  readonly random?: () => number;
}

export interface PendingAccountWatch {
  /** The pending agents changed: the subscriptions follow them soon (a few changes make one pass). */
  refresh(): void;
  /** Accounts subscribed now. */
  readonly watched: number;
  /** Closes the socket and stops every timer. */
  close(): Promise<void>;
}

/** One account's subscription: asked (request id), held (subscription id), or refused. */
interface Subscription {
  readonly account: string;
  request?: number;
  id?: number;
  refused?: boolean;
  /** Left the wanted set while its subscribe was in flight: unsubscribed on its answer. */
  dropped?: boolean;
}

/**
 * Watches the token accounts of pending agents with `accountSubscribe`, over one WebSocket of its
 * own (a plain JSON-RPC client: kit's subscriptions neither reconnect nor let one socket carry a
 * thousand subscriptions without a pool of sockets), and tells of the agents whose account changed,
 * so that they are checked at once instead of at their next poll. The poll remains the fallback:
 * nothing here throws into the scheduler, and while the socket is down the poll alone activates.
 *
 * Bounded: at most `maxAccounts` subscriptions, chosen as the checks are, fairly per owner (each
 * owner gets an equal share, an owner with fewer agents leaves its rest to the others), an
 * owner's oldest agents first (the newest are checked every second by the poll anyway, and the
 * choice then changes little as agents come and go). A subscription is dropped when its agents
 * stop being pending.
 *
 * Faults: a socket that closes, fails to open or stops answering pings is opened again after a
 * bounded, jittered backoff; every account is then subscribed again, and its agents checked once
 * its subscription is answered (a change may have landed while it was down).
 */
export function createPendingAccountWatch(options: PendingAccountWatchOptions): PendingAccountWatch {
  const { url, maxAccounts, commitment, events = {} } = options;
  const retryBaseMs = options.retryBaseMs ?? RETRY_BASE_MS;
  const retryMaxMs = options.retryMaxMs ?? RETRY_MAX_MS;
  /** Agents by the account watched for them. */
  let wanted = new Map<string, readonly string[]>();
  /** Accounts of agents, worked out once per agent (a chain read of the mint the first time). */
  const accounts = new Map<string, string | undefined>();
  /** Subscriptions by account, and by request and subscription id. */
  const byAccount = new Map<string, Subscription>();
  const byRequest = new Map<number, Subscription>();
  const byId = new Map<number, Subscription>();
  let socket: WebSocket | undefined;
  let open = false;
  let closed = false;
  let failures = 0;
  /** The socket opened before: the next open is a reconnection. */
  let wasOpen = false;
  let nextRequest = 1;
  let unwatched = 0;
  let reconnectTimer: NodeJS.Timeout | undefined;
  let refreshTimer: NodeJS.Timeout | undefined;
  let pingTimer: NodeJS.Timeout | undefined;
  let syncing: Promise<void> | undefined;
  let syncAgain = false;

  const subscribed = () => {
    let count = 0;
    for (const sub of byAccount.values()) if (sub.id !== undefined) count++;
    return count;
  };
  const report = () => events.onWatched?.(subscribed(), unwatched);

  const send = (message: object) => {
    if (socket === undefined || !open) return;
    try {
      socket.send(JSON.stringify({ jsonrpc: "2.0", ...message }));
    } catch {
      // The socket is closing: its "close" reconnects and subscribes everything again.
    }
  };
  const subscribe = (sub: Subscription) => {
    const request = nextRequest++;
    sub.request = request;
    byRequest.set(request, sub);
    send({
      id: request,
      method: "accountSubscribe",
      // Nothing of the account's data is needed, only that it changed: an empty slice keeps each
      // notification a few hundred bytes.
      params: [sub.account, { commitment, encoding: "base64", dataSlice: { offset: 0, length: 0 } }],
    });
  };
  const unsubscribe = (sub: Subscription) => {
    byAccount.delete(sub.account);
    if (sub.id === undefined) {
      // Still being answered: unsubscribed when it is (see onMessage).
      if (sub.request !== undefined) sub.dropped = true;
      return;
    }
    byId.delete(sub.id);
    send({ id: nextRequest++, method: "accountUnsubscribe", params: [sub.id] });
  };

  /** The wanted accounts: the owners' oldest agents, an equal share each, within maxAccounts. */
  async function sync(): Promise<void> {
    const lists = [...options.pending()];
    const shares = fairShares(
      lists.map((l) => l.length),
      maxAccounts,
    );
    const chosen: AgentRecord[] = [];
    let total = 0;
    lists.forEach((list, i) => {
      total += list.length;
      const share = shares[i] ?? 0;
      if (share === 0) return;
      const oldest =
        share >= list.length
          ? list
          : [...list].sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime()).slice(0, share);
      chosen.push(...oldest);
    });
    unwatched = total - chosen.length;
    const next = new Map<string, string[]>();
    const keep = new Set<string>();
    for (const agent of chosen) {
      keep.add(agent.agentId);
      let account = accounts.get(agent.agentId);
      if (!accounts.has(agent.agentId)) {
        try {
          account = await options.accountOf(agent);
          accounts.set(agent.agentId, account);
        } catch {
          // The chain cannot tell its mint now: tried again at the next pass; the poll checks it.
          scheduleRefresh(RETRY_ACCOUNT_MS);
          continue;
        }
      }
      if (account === undefined) continue;
      const agents = next.get(account);
      if (agents === undefined) next.set(account, [agent.agentId]);
      else agents.push(agent.agentId);
    }
    for (const agentId of accounts.keys()) if (!keep.has(agentId)) accounts.delete(agentId);
    wanted = next;
    if (closed) return;
    for (const sub of [...byAccount.values()]) if (!wanted.has(sub.account)) unsubscribe(sub);
    for (const account of wanted.keys()) {
      if (byAccount.has(account)) continue;
      const sub: Subscription = { account };
      byAccount.set(account, sub);
      if (open) subscribe(sub);
    }
    if (wanted.size > 0 && socket === undefined && reconnectTimer === undefined) connect();
    report();
  }

  function scheduleRefresh(delayMs: number): void {
    if (closed || refreshTimer !== undefined) return;
    refreshTimer = setTimeout(() => {
      refreshTimer = undefined;
      runSync();
    }, delayMs);
    refreshTimer.unref();
  }

  function runSync(): void {
    if (closed) return;
    if (syncing !== undefined) {
      syncAgain = true;
      return;
    }
    syncing = sync()
      .catch(() => {
        // sync catches what it calls; nothing reaches here but a bug, never the scheduler.
      })
      .finally(() => {
        syncing = undefined;
        if (syncAgain) {
          syncAgain = false;
          runSync();
        }
      });
  }

  function onMessage(data: WebSocket.RawData): void {
    let message: {
      id?: unknown;
      result?: unknown;
      error?: { message?: unknown };
      method?: unknown;
      params?: { subscription?: unknown; result?: { context?: { slot?: unknown } } };
    };
    try {
      message = JSON.parse(data.toString());
    } catch {
      return;
    }
    if (message.method === "accountNotification") {
      const sub = byId.get(Number(message.params?.subscription));
      const agents = sub === undefined ? undefined : wanted.get(sub.account);
      if (agents === undefined) return;
      events.onNotification?.();
      const slot = Number(message.params?.result?.context?.slot);
      options.onChange(agents, Number.isSafeInteger(slot) ? `s${slot}` : `t${Math.floor(Date.now() / 1000)}`);
      return;
    }
    if (typeof message.id !== "number") return;
    const sub = byRequest.get(message.id);
    if (sub === undefined) return;
    byRequest.delete(message.id);
    sub.request = undefined;
    if (message.error !== undefined || typeof message.result !== "number") {
      sub.refused = true;
      events.onRefused?.(String(message.error?.message ?? "no subscription id"));
      return;
    }
    sub.id = message.result;
    if (sub.dropped === true) {
      send({ id: nextRequest++, method: "accountUnsubscribe", params: [sub.id] });
      return;
    }
    byId.set(sub.id, sub);
    report();
    // From now on a change is heard of; one that landed before (while the socket was down, or
    // between the agent's last check and now) is found by this check.
    const agents = wanted.get(sub.account);
    if (agents !== undefined) options.onChange(agents, `w${Math.floor(Date.now() / WATCH_CHECK_MS)}`);
  }

  function connect(): void {
    if (closed) return;
    reconnectTimer = undefined;
    const ws = new WebSocket(url, {
      handshakeTimeout: HANDSHAKE_TIMEOUT_MS,
      maxPayload: MAX_MESSAGE_BYTES,
      perMessageDeflate: false,
    });
    socket = ws;
    let alive = true;
    ws.on("open", () => {
      open = true;
      failures = 0;
      events.onConnected?.();
      if (wasOpen) events.onReconnected?.();
      wasOpen = true;
      for (const sub of byAccount.values()) subscribe(sub);
      pingTimer = setInterval(() => {
        // No pong since the last ping: the connection is dead without having closed (a half-open
        // TCP connection would otherwise silence every notification for good).
        if (!alive) {
          ws.terminate();
          return;
        }
        alive = false;
        ws.ping();
      }, PING_MS);
      pingTimer.unref();
    });
    ws.on("pong", () => {
      alive = true;
    });
    ws.on("message", (data) => {
      try {
        onMessage(data);
      } catch {
        // A message this client does not understand is dropped; nothing here may take the process down.
      }
    });
    ws.on("error", () => {
      // Followed by "close", which reconnects; the error itself may name the URL: not logged.
    });
    ws.on("close", (code) => {
      if (socket !== ws) return;
      clearInterval(pingTimer);
      pingTimer = undefined;
      socket = undefined;
      open = false;
      // Every subscription died with the socket: asked again on the next one.
      byRequest.clear();
      byId.clear();
      for (const sub of byAccount.values()) {
        sub.id = undefined;
        sub.request = undefined;
        sub.refused = undefined;
      }
      report();
      if (closed) return;
      failures++;
      const delay = Math.max(
        retryBaseMs / 2,
        retryDelayMs(failures, {
          baseMs: retryBaseMs,
          maxMs: retryMaxMs,
          ...(options.random === undefined ? {} : { random: options.random }),
        }),
      );
      events.onDisconnected?.(delay, code === 1006 ? "the connection failed" : `closed with ${code}`);
      reconnectTimer = setTimeout(connect, delay);
      reconnectTimer.unref();
    });
  }

  return {
    refresh: () => scheduleRefresh(REFRESH_DELAY_MS),
    get watched() {
      return subscribed();
    },
    async close() {
      closed = true;
      clearTimeout(reconnectTimer);
      clearTimeout(refreshTimer);
      clearInterval(pingTimer);
      reconnectTimer = undefined;
      refreshTimer = undefined;
      await syncing;
      const ws = socket;
      socket = undefined;
      open = false;
      if (ws !== undefined) {
        let timer: NodeJS.Timeout | undefined;
        const gone = new Promise<void>((resolve) => {
          ws.once("close", () => resolve());
          // Never held up by a socket that does not report its end.
          timer = setTimeout(resolve, CLOSE_WAIT_MS);
        });
        ws.terminate();
        await gone;
        clearTimeout(timer);
      }
      byAccount.clear();
      byRequest.clear();
      byId.clear();
      events.onWatched?.(0, 0);
    },
  };
}

/**
 * Each owner's share of `limit` places, owners having `counts` candidates: equal shares, an owner
 * with fewer than its share keeping only what it has and leaving the rest to the others (the
 * remainder of an uneven split goes to the first owners). Sums to min(limit, sum of counts).
 */
export function fairShares(counts: readonly number[], limit: number): number[] {
  const shares = counts.map(() => 0);
  const order = counts.map((_, i) => i).sort((a, b) => (counts[a] as number) - (counts[b] as number));
  let left = limit;
  for (let k = 0; k < order.length; k++) {
    const i = order[k] as number;
    const share = Math.floor(left / (order.length - k));
    shares[i] = Math.min(counts[i] as number, share);
    left -= shares[i] as number;
  }
  // What floor() left over goes one each to owners that still have candidates.
  for (let i = 0; i < counts.length && left > 0; i++) {
    if ((shares[i] as number) < (counts[i] as number)) {
      shares[i] = (shares[i] as number) + 1;
      left--;
    }
  }
  return shares;
}

/** How long close() waits for the socket to report it closed. */
const CLOSE_WAIT_MS = 1_000;
/** First reconnection delay, and the longest. */
const RETRY_BASE_MS = 1_000;
const RETRY_MAX_MS = 30_000;
/** A handshake that takes longer is abandoned (and retried). */
const HANDSHAKE_TIMEOUT_MS = 10_000;
/** Between pings; a connection that has not answered the last one by the next is dropped. */
const PING_MS = 30_000;
/** Largest message read: notifications carry no account data here, answers are small. */
const MAX_MESSAGE_BYTES = 1024 * 1024;
/**
 * Changes of the pending agents within this are followed together: a pass reads every pending
 * agent known here, so a steady stream of creates makes a few passes a second, not one each.
 */
const REFRESH_DELAY_MS = 200;
/** An account whose mint could not be read is tried again after this. */
const RETRY_ACCOUNT_MS = 5_000;
/** A (re)subscription's check is claimed per this span, so that replicas subscribing together make one. */
const WATCH_CHECK_MS = 10_000;

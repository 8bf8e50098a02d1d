import { timingSafeEqual } from "node:crypto";
import * as http from "node:http";
import { WebSocket, WebSocketServer } from "ws";
import type { LocalChainPubSubLimits } from "../../config.ts";
import type { JsonRpcHandler } from "../rpc/json-rpc-handler.ts";
import { createChainCors } from "../server/cors.ts";
import { createHostCheck } from "../server/host-check.ts";
import { listen } from "../server/listen.ts";
import type { PubSubCaller } from "./pubsub-methods.ts";
import type { NotificationSink, PubSubSubscriptions } from "./pubsub-subscriptions.ts";

export interface PubSubServerOptions {
  /** Answers the PubSub methods (pubsub-methods.ts); the caller it gets carries the connection. */
  readonly handler: JsonRpcHandler;
  readonly subscriptions: PubSubSubscriptions;
  /** 0: any free port. */
  readonly port: number;
  readonly limits: LocalChainPubSubLimits;
  /** Host names answered besides the loopback ones (see ../server/host-check.ts). */
  readonly allowedHosts?: readonly string[];
  /** Web origins that may connect besides pages on this machine (see ../server/cors.ts). */
  readonly allowedOrigins?: readonly string[];
  /**
   * A secret of the service's (../worker/local-chain-worker-host.ts): a connection to /service/<it> is the
   * service's own watch, whose subscriptions are outside the clients' caps (the node's, each
   * address's) and which the connection cap does not turn away. Undefined: no such path.
   */
  readonly serviceToken?: string;
  /**
   * Told of what the port refused or cut off: `host`, `origin`, `connection_limit`, `message_too_large`,
   * `slow_client` (a connection whose unsent notifications passed the bound), `not_websocket`.
   */
  readonly onRejected?: (reason: string) => void;
  readonly onUnexpected?: (error: unknown, method: string) => void;
}

export interface PubSubServer {
  /** ws://127.0.0.1:port */
  readonly url: string;
  /** ws://127.0.0.1:port/service/<token>, the service's own path, when it has one. */
  readonly serviceUrl: string | undefined;
  readonly port: number;
  /** Open connections, the bytes written to them that they have not taken yet, and subscriptions. */
  stats(): { connections: number; bufferedBytes: number; subscriptions: number };
  close(): Promise<void>;
}

/** Only this host, as solana-test-validator and surfpool bind their PubSub port. */
const HOST = "127.0.0.1";
/** A connection that answers no ping within this long is gone (a half-open TCP connection). */
const HEARTBEAT_MS = 30_000;

/**
 * Solana's PubSub over WebSocket (the `ws` library) on 127.0.0.1, as a validator serves it on its
 * RPC port + 1: JSON-RPC text messages in, answers and notifications out. It runs in the
 * service's process, so what one client can hold of it is bounded: connections (more are refused
 * with 503 before the upgrade), subscriptions per connection, the size of a message (a larger one
 * closes the connection with 1009), and the notifications written to a client but not yet taken:
 * a client that stops reading is cut off once they pass the bound, instead of holding memory.
 * Refusals are counted through `onRejected`.
 */
export async function startPubSubServer(options: PubSubServerOptions): Promise<PubSubServer> {
  const { handler, subscriptions, limits } = options;
  const rejected = options.onRejected ?? (() => {});
  const unexpected = options.onUnexpected ?? (() => {});
  const hostAllowed = createHostCheck({
    boundHost: HOST,
    ...(options.allowedHosts === undefined ? {} : { allowedHosts: options.allowedHosts }),
  });
  // Browsers apply no CORS to WebSockets: the Origin they send is checked here, as on the RPC port.
  const cors = createChainCors(
    options.allowedOrigins === undefined ? {} : { allowedOrigins: options.allowedOrigins },
  );
  const server = http.createServer({ headersTimeout: 10_000, requestTimeout: 30_000 });
  const wss = new WebSocketServer({
    noServer: true,
    maxPayload: limits.maxMessageBytes,
    // Compression would cost every notification CPU and each connection a zlib context.
    perMessageDeflate: false,
    clientTracking: true,
  });
  const alive = new WeakSet<WebSocket>();
  const servicePath =
    options.serviceToken === undefined ? undefined : Buffer.from(`/service/${options.serviceToken}`);
  const isServicePath = (path: string | undefined): boolean => {
    if (servicePath === undefined || path === undefined) return false;
    const given = Buffer.from(path);
    return given.length === servicePath.length && timingSafeEqual(given, servicePath);
  };
  /** Open connections of the service's own: not counted in the connection cap. */
  let ownConnections = 0;

  server.on("request", (req, res) => {
    req.resume();
    rejected("not_websocket");
    res.writeHead(400, { "content-type": "text/plain", connection: "close" });
    res.end(
      "This is the local chain's PubSub port: connect with a WebSocket (JSON-RPC over HTTP is on the port below)\n",
    );
  });
  server.on("upgrade", (req, socket, head) => {
    const refuse = (status: string, reason: string, text: string) => {
      rejected(reason);
      socket.end(
        `HTTP/1.1 ${status}\r\nContent-Type: text/plain\r\nContent-Length: ${Buffer.byteLength(text)}\r\nConnection: close\r\n\r\n${text}`,
      );
    };
    socket.on("error", () => socket.destroy());
    if (!hostAllowed(req.headers.host)) {
      refuse(
        "403 Forbidden",
        "host",
        "Invalid Host header: the local chain answers requests to localhost, 127.0.0.1 and [::1] (add names with LOCAL_SOLANA_ALLOWED_HOSTS)\n",
      );
      return;
    }
    if (!cors.allows(req.headers.origin)) {
      refuse(
        "403 Forbidden",
        "origin",
        "Origin not allowed: the local chain answers pages served from localhost, 127.0.0.1 and [::1] (add origins with LOCAL_SOLANA_ALLOWED_ORIGINS)\n",
      );
      return;
    }
    const own = isServicePath(req.url);
    if (!own && wss.clients.size - ownConnections >= limits.maxConnections) {
      refuse(
        "503 Service Unavailable",
        "connection_limit",
        `Too many PubSub connections (at most ${limits.maxConnections}, LOCAL_SOLANA_PUBSUB_MAX_CONNECTIONS)\n`,
      );
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => {
      if (own) {
        ownConnections++;
        ws.once("close", () => ownConnections--);
      }
      // The service's own connection has no address: the methods count it in no client's cap.
      serve(ws, own ? undefined : (req.socket.remoteAddress ?? "unknown"));
    });
  });

  const serve = (ws: WebSocket, address: string | undefined) => {
    alive.add(ws);
    ws.on("pong", () => alive.add(ws));
    /** While a request is answered, notifications wait, so that a subscription's id comes first. */
    let held: string[] | undefined;
    const write = (text: string) => {
      if (ws.readyState !== WebSocket.OPEN) return;
      if (ws.bufferedAmount > limits.maxBufferedBytes) {
        rejected("slow_client");
        ws.terminate();
        return;
      }
      ws.send(text);
    };
    const sink: NotificationSink = {
      send(text) {
        if (held === undefined) write(text);
        else held.push(text);
      },
    };
    const caller: PubSubCaller = { address, sink };
    let queue = Promise.resolve();
    ws.on("message", (data) => {
      const text = Array.isArray(data) ? Buffer.concat(data).toString("utf8") : data.toString("utf8");
      // One after another: answers go out in the order their requests came.
      queue = queue.then(async () => {
        held = [];
        try {
          const answer = await handler.handle(text, caller);
          if (answer !== "") write(answer);
        } catch (error) {
          unexpected(error, "unknown");
        } finally {
          const waiting = held;
          held = undefined;
          for (const notification of waiting ?? []) write(notification);
        }
      });
    });
    ws.on("error", (error: Error & { code?: string }) => {
      if (error.code === "WS_ERR_UNSUPPORTED_MESSAGE_LENGTH") rejected("message_too_large");
    });
    ws.on("close", () => subscriptions.drop(sink));
  };

  const heartbeat = setInterval(() => {
    for (const ws of wss.clients) {
      if (!alive.has(ws)) {
        ws.terminate();
        continue;
      }
      alive.delete(ws);
      ws.ping();
    }
  }, HEARTBEAT_MS);
  heartbeat.unref();

  const port = await listen(server, options.port, HOST);
  return {
    url: `ws://${HOST}:${port}`,
    serviceUrl: servicePath === undefined ? undefined : `ws://${HOST}:${port}${servicePath}`,
    port,
    stats() {
      let bufferedBytes = 0;
      for (const ws of wss.clients) bufferedBytes += ws.bufferedAmount;
      return { connections: wss.clients.size, bufferedBytes, subscriptions: subscriptions.size };
    },
    close: () =>
      new Promise<void>((resolve) => {
        clearInterval(heartbeat);
        for (const ws of wss.clients) {
          ws.close(1001, "the local chain is stopping");
          setTimeout(() => ws.terminate(), 1000).unref();
        }
        wss.close();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

import * as http from "node:http";
import * as http2 from "node:http2";
import * as net from "node:net";
import type { connectNodeAdapter } from "@connectrpc/connect-node";
import type { HttpLimits } from "../config.ts";
import { answerClientError } from "./client-error.ts";
import type { Rejection } from "./rejection.ts";
import { createStreamDeadlines } from "./stream-deadlines.ts";

/** The client connection preface every HTTP/2 connection starts with (RFC 9113, section 3.4). */
const H2_PREFACE = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "latin1");

/** A request listener that serves both protocols, as connect-node's adapter is. */
export type RequestHandler = ReturnType<typeof connectNodeAdapter>;

export type { Rejection } from "./rejection.ts";

export interface DualProtocolServer {
  /** The listening socket; call `listen` on it. */
  readonly server: net.Server;
  /**
   * Stops accepting connections, lets requests in flight finish for up to `timeoutMs`, then cuts
   * what is left. Resolves once every connection is closed.
   */
  close(timeoutMs: number): Promise<void>;
}

export interface DualProtocolServerOptions {
  handler: RequestHandler;
  limits: HttpLimits;
  /** Told of every connection or request turned away by the limits or the HTTP parser. */
  onRejected?: (reason: Rejection) => void;
  /**
   * Serves an HTTP/2 stream directly (the raw stream API, without the compatibility layer's
   * request and response objects); false hands it to `handler` as usual.
   */
  streamHandler?: (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders) => boolean;
  /**
   * True for paths whose request body legitimately stays open (client-streaming and bidi RPCs
   * over HTTP/2); REQUEST_TIMEOUT_MS does not apply to them.
   */
  isStreamingRequest?: (path: string) => boolean;
}

/**
 * One port for HTTP/1.1 and cleartext HTTP/2 with prior knowledge (h2c), which Connect, gRPC-Web
 * and gRPC clients need between them. A plain http2 server refuses HTTP/1.1 and a plain http
 * server cannot speak h2c, so each connection's first bytes are compared with the HTTP/2 preface
 * and the connection is handed to the matching server.
 *
 * Every resource a client can hold is bounded (see HttpLimits): connections, HTTP/2 streams per
 * connection, the time to send headers and a whole request, and idle time.
 */
export function createDualProtocolServer(options: DualProtocolServerOptions): DualProtocolServer {
  const { limits } = options;
  const onRejected = options.onRejected ?? (() => {});
  const h1 = http.createServer(
    {
      keepAliveTimeout: Math.min(5_000, limits.idleTimeoutMs),
      headersTimeout: limits.headersTimeoutMs,
      requestTimeout: limits.requestTimeoutMs,
      // Node checks the two timeouts above on this interval (30 s by default), which would let a
      // slow client overstay a short timeout by that much.
      connectionsCheckingInterval: Math.min(1_000, limits.headersTimeoutMs),
    },
    options.handler as http.RequestListener,
  );
  h1.on("clientError", (error: NodeJS.ErrnoException, socket: net.Socket) => {
    const reason = answerClientError(error, socket);
    if (reason !== undefined) onRejected(reason);
  });
  const h2 = http2.createServer(
    { settings: { maxConcurrentStreams: limits.maxConcurrentStreams } },
    options.handler as (req: http2.Http2ServerRequest, res: http2.Http2ServerResponse) => void,
  );
  h2.setTimeout(limits.idleTimeoutMs);
  const streamHandler = options.streamHandler;
  if (streamHandler !== undefined) {
    // Node dispatches streams to `handler` through its compatibility layer, a "stream" listener
    // of its own; streams the raw handler declines are passed on to it unchanged.
    const compat = h2.listeners("stream") as ((...args: unknown[]) => void)[];
    for (const listener of compat) h2.off("stream", listener);
    h2.on("stream", (stream, headers, flags, rawHeaders) => {
      if (streamHandler(stream, headers)) return;
      for (const listener of compat) listener.call(h2, stream, headers, flags, rawHeaders);
    });
  }
  const streamDeadlines = createStreamDeadlines({
    timeoutMs: limits.requestTimeoutMs,
    exempt: options.isStreamingRequest ?? (() => false),
    onExpired: () => onRejected("request_timeout"),
  });
  h2.on("stream", streamDeadlines.track);
  const sessions = new Set<http2.ServerHttp2Session>();
  const sockets = new Set<net.Socket>();
  /**
   * HTTP/1.1 connections, with the number of requests each is answering right now. A socket is in
   * here from its hand-over until its "close", and never after: a response that ends after its
   * connection closed must not put the dead socket back (it would be retained for good).
   */
  const h1Active = new Map<net.Socket, number>();
  h2.on("session", (session) => {
    sessions.add(session);
    session.once("close", () => sessions.delete(session));
  });

  // Node's http server arms its header and request timeouts (slow-client protection) when it
  // emits "listening"; h1 never listens itself, so it hears that from the shared listener.
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
    socket.setNoDelay(true);
    sniff(socket, limits.headersTimeoutMs, onRejected, (isH2, head) => {
      if (isH2) {
        // http2 takes bytes already read from a socket from its readable buffer (unlike http's
        // parser), so the native socket itself is handed over and frames skip any JS wrapper.
        socket.unshift(head);
        h2.emit("connection", socket);
      } else {
        // http's parser may read the native handle directly too, so `unshift` would strand the
        // bytes in the JS buffer; feed them to the parser's data listener instead.
        h1Active.set(socket, 0);
        socket.once("close", () => h1Active.delete(socket));
        h1.emit("connection", socket);
        socket.emit("data", head);
        socket.resume();
      }
    });
  });
  server.maxConnections = limits.maxConnections;
  // Past the cap Node closes new connections on arrival; the file-descriptor limit is never
  // reached, so connections already open keep being served.
  server.on("drop", () => onRejected("connection_limit"));

  server.on("listening", () => h1.emit("listening"));
  server.on("close", () => {
    streamDeadlines.stop();
    h1.close();
  });

  let closing = false;
  // Node's own idle-connection tracking does not cover sockets handed over with "connection", so
  // in-flight HTTP/1.1 requests are counted here: once closing, a connection ends as soon as it
  // has answered what it was answering, and idle ones end at once.
  h1.on("request", (req: http.IncomingMessage, res: http.ServerResponse) => {
    const socket = req.socket;
    const active = h1Active.get(socket);
    if (active === undefined) return; // the connection closed before its request was dispatched
    h1Active.set(socket, active + 1);
    if (closing) res.shouldKeepAlive = false;
    res.once("close", () => {
      const current = h1Active.get(socket);
      if (current === undefined) return; // the connection is gone, and so is its entry
      h1Active.set(socket, current - 1);
      if (closing && current === 1) socket.end();
    });
  });

  return {
    server,
    close(timeoutMs) {
      closing = true;
      return new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          for (const session of sessions) session.destroy();
          for (const socket of sockets) socket.destroy();
        }, timeoutMs);
        timer.unref();
        // Stop accepting; the callback runs once every connection has ended.
        server.close(() => {
          clearTimeout(timer);
          resolve();
        });
        for (const [socket, active] of h1Active) if (active === 0) socket.end();
        // GOAWAY: the client opens no new streams here, streams in flight complete.
        for (const session of sessions) session.close();
      });
    },
  };
}

/**
 * Reads until the first bytes either match the whole HTTP/2 preface or stop matching it. A client
 * that connects and sends nothing is dropped after `timeoutMs` (the headers timeout: it has sent
 * none), so idle sockets cannot pile up.
 */
function sniff(
  socket: net.Socket,
  timeoutMs: number,
  onRejected: (reason: Rejection) => void,
  decide: (isH2: boolean, head: Buffer) => void,
): void {
  let head: Buffer = Buffer.alloc(0);
  const onData = (chunk: Buffer) => {
    head = head.length === 0 ? chunk : Buffer.concat([head, chunk]);
    const n = Math.min(head.length, H2_PREFACE.length);
    const matches = head.subarray(0, n).equals(H2_PREFACE.subarray(0, n));
    if (matches && head.length < H2_PREFACE.length) return;
    socket.off("data", onData);
    socket.off("error", onError);
    socket.setTimeout(0);
    socket.pause();
    decide(matches, head);
  };
  const onError = () => socket.destroy();
  socket.on("data", onData);
  socket.on("error", onError);
  socket.setTimeout(timeoutMs, () => {
    onRejected("headers_timeout");
    socket.destroy();
  });
}

import * as http from "node:http";
import * as http2 from "node:http2";
import * as net from "node:net";
import type { connectNodeAdapter } from "@connectrpc/connect-node";
import { createReplaySocket } from "./replay-socket.ts";

/** The client connection preface every HTTP/2 connection starts with (RFC 9113, section 3.4). */
const H2_PREFACE = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "latin1");

/** A request listener that serves both protocols, as connect-node's adapter is. */
export type RequestHandler = ReturnType<typeof connectNodeAdapter>;

export interface DualProtocolServer {
  /** The listening socket; call `listen` on it. */
  readonly server: net.Server;
  /**
   * Stops accepting connections, lets requests in flight finish for up to `timeoutMs`, then cuts
   * what is left. Resolves once every connection is closed.
   */
  close(timeoutMs: number): Promise<void>;
}

/**
 * One port for HTTP/1.1 and cleartext HTTP/2 with prior knowledge (h2c), which Connect, gRPC-Web
 * and gRPC clients need between them. A plain http2 server refuses HTTP/1.1 and a plain http
 * server cannot speak h2c, so each connection's first bytes are compared with the HTTP/2 preface
 * and the connection is handed to the matching server.
 */
export function createDualProtocolServer(options: {
  handler: RequestHandler;
  /** Idle keep-alive timeout for both protocols. */
  idleTimeoutMs?: number;
}): DualProtocolServer {
  const idleTimeoutMs = options.idleTimeoutMs ?? 60_000;
  const h1 = http.createServer({ keepAliveTimeout: 5_000 }, options.handler as http.RequestListener);
  const h2 = http2.createServer(
    {},
    options.handler as (req: http2.Http2ServerRequest, res: http2.Http2ServerResponse) => void,
  );
  h2.setTimeout(idleTimeoutMs);
  const sessions = new Set<http2.ServerHttp2Session>();
  const sockets = new Set<net.Socket>();
  /** HTTP/1.1 connections, with the number of requests each is answering right now. */
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
    sniff(socket, idleTimeoutMs, (isH2, head) => {
      if (isH2) {
        h2.emit("connection", createReplaySocket(socket, head));
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

  server.on("listening", () => h1.emit("listening"));

  let closing = false;
  // Node's own idle-connection tracking does not cover sockets handed over with "connection", so
  // in-flight HTTP/1.1 requests are counted here: once closing, a connection ends as soon as it
  // has answered what it was answering, and idle ones end at once.
  h1.on("request", (req: http.IncomingMessage, res: http.ServerResponse) => {
    const socket = req.socket;
    h1Active.set(socket, (h1Active.get(socket) ?? 0) + 1);
    if (closing) res.shouldKeepAlive = false;
    res.once("close", () => {
      const left = (h1Active.get(socket) ?? 1) - 1;
      h1Active.set(socket, left);
      if (closing && left === 0) socket.end();
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
 * that connects and sends nothing is dropped after `timeoutMs`, so idle sockets cannot pile up.
 */
function sniff(socket: net.Socket, timeoutMs: number, decide: (isH2: boolean, head: Buffer) => void): void {
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
  socket.setTimeout(timeoutMs, () => socket.destroy());
}

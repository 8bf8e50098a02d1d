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
  h2.on("session", (session) => {
    sessions.add(session);
    session.once("close", () => sessions.delete(session));
  });

  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
    socket.setNoDelay(true);
    sniff(socket, (isH2, head) => {
      if (isH2) {
        h2.emit("connection", createReplaySocket(socket, head));
      } else {
        // http's parser may read the native handle directly too, so `unshift` would strand the
        // bytes in the JS buffer; feed them to the parser's data listener instead.
        h1.emit("connection", socket);
        socket.emit("data", head);
        socket.resume();
      }
    });
  });

  let closing = false;
  // Once closing, HTTP/1.1 responses end their connection instead of keeping it alive.
  h1.on("request", (_req, res: http.ServerResponse) => {
    if (closing) res.shouldKeepAlive = false;
  });

  return {
    server,
    close(timeoutMs) {
      closing = true;
      return new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          h1.closeAllConnections();
          for (const session of sessions) session.destroy();
          for (const socket of sockets) socket.destroy();
        }, timeoutMs);
        timer.unref();
        // Stop accepting; the callback runs once every connection has ended.
        server.close(() => {
          clearTimeout(timer);
          resolve();
        });
        h1.closeIdleConnections();
        // GOAWAY: the client opens no new streams here, streams in flight complete.
        for (const session of sessions) session.close();
      });
    },
  };
}

/** Reads until the first bytes either match the whole HTTP/2 preface or stop matching it. */
function sniff(socket: net.Socket, decide: (isH2: boolean, head: Buffer) => void): void {
  let head: Buffer = Buffer.alloc(0);
  const onData = (chunk: Buffer) => {
    head = head.length === 0 ? chunk : Buffer.concat([head, chunk]);
    const n = Math.min(head.length, H2_PREFACE.length);
    const matches = head.subarray(0, n).equals(H2_PREFACE.subarray(0, n));
    if (matches && head.length < H2_PREFACE.length) return;
    socket.off("data", onData);
    socket.off("error", onError);
    socket.pause();
    decide(matches, head);
  };
  const onError = () => socket.destroy();
  socket.on("data", onData);
  socket.on("error", onError);
}

import * as http from "node:http";
import type { Socket } from "node:net";
import type { LocalChainPortLimits } from "../../config.ts";
import type { JsonRpcHandler, RpcCaller } from "../rpc/json-rpc-handler.ts";
import { createAnswerWriter } from "./answer-writer.ts";
import { createChainCors } from "./cors.ts";
import { createHostCheck } from "./host-check.ts";
import { listen } from "./listen.ts";

export interface LocalChainServerOptions {
  readonly handler: JsonRpcHandler;
  /** 0: any free port. */
  readonly port: number;
  /** Largest request body read; a larger one is refused with 413. */
  readonly maxRequestBytes: number;
  /** Connections, requests in flight, unsent bytes and the write timeout (the handler bounds answers). */
  readonly limits: Omit<LocalChainPortLimits, "maxAnswerBytes" | "maxRequestMs">;
  /**
   * Told about requests turned away before JSON-RPC saw them (`host`, `origin`, `too_large`, `method`,
   * `content_type`, `in_flight_limit`, `unsent_limit`), connections refused (`connection_limit`)
   * and answers cut off because the client did not read them (`write_timeout`).
   */
  readonly onRejected?: (reason: string) => void;
  /** Told about an error that escaped the JSON-RPC handler (its request answers -32603). */
  readonly onUnexpected?: (error: unknown, method: string) => void;
  /** Host names answered besides the loopback ones (see host-check.ts). */
  readonly allowedHosts?: readonly string[];
  /** Web origins that may call the port besides pages on this machine (see cors.ts). */
  readonly allowedOrigins?: readonly string[];
}

export interface LocalChainServer {
  /** The URL wallets and scripts use (http://127.0.0.1:port). */
  readonly url: string;
  readonly port: number;
  close(): Promise<void>;
}

/** What Agave's server takes as a JSON body (jsonrpc-http-server), case aside. */
const JSON_CONTENT_TYPE = /^application\/json(\s*;\s*charset=utf-8)?$/i;

/** What a request answers when answering it failed: JSON-RPC's internal error, without an id. */
const INTERNAL_ERROR_ANSWER =
  '{"jsonrpc":"2.0","error":{"code":-32603,"message":"Internal error"},"id":null}\n';

/** Only this host: the local chain's faucet and cheatcodes are for the developer at this machine. */
const HOST = "127.0.0.1";

/**
 * Serves the local chain's JSON-RPC over HTTP on 127.0.0.1, as a validator's RPC port does: POST
 * with a JSON-RPC body (any path, `application/json`; 415 otherwise), OPTIONS, and `GET /health`
 * answering "ok", to tools and to the pages of this machine's origins or listed ones (cors.ts); a
 * request from another web origin is refused (403). JSON-RPC errors are HTTP 200, as kit expects. The port runs in the service's
 * process, so what one client can hold of it is bounded: bodies are read up to a bound, slow
 * senders are cut off, connections and the requests each has unanswered (pipelining) are
 * capped, and an answer the client does not read within the write timeout is cut off rather
 * than held. Nothing listens on any other interface.
 */
export async function startLocalChainServer(options: LocalChainServerOptions): Promise<LocalChainServer> {
  const { handler, maxRequestBytes, limits } = options;
  const hostAllowed = createHostCheck({
    boundHost: HOST,
    ...(options.allowedHosts === undefined ? {} : { allowedHosts: options.allowedHosts }),
  });
  const cors = createChainCors(
    options.allowedOrigins === undefined ? {} : { allowedOrigins: options.allowedOrigins },
  );
  const rejected = options.onRejected ?? (() => {});
  const unexpected = options.onUnexpected ?? (() => {});
  const server = http.createServer({
    headersTimeout: 10_000,
    requestTimeout: 30_000,
    keepAliveTimeout: 5_000,
  });
  // Past the cap Node closes new connections on arrival; the ones open keep being served.
  server.maxConnections = limits.maxConnections;
  server.on("drop", () => rejected("connection_limit"));

  const writer = createAnswerWriter({
    writeTimeoutMs: limits.writeTimeoutMs,
    onTimeout: () => rejected("write_timeout"),
  });
  const send = writer.send;
  const refuse = (res: http.ServerResponse, status: number, reason: string, text: string, close = false) => {
    rejected(reason);
    send(res, status, { "content-type": "text/plain", ...(close ? { connection: "close" } : {}) }, text);
  };

  // Requests each connection has unanswered: HTTP/1.1 lets a client send many before reading any
  // answer, and Node runs every one it has parsed, so one write could queue hundreds of answers.
  const inFlight = new WeakMap<Socket, number>();
  server.on("request", (req, res) => {
    cors.apply(req, res);
    const socket = req.socket;
    const unanswered = (inFlight.get(socket) ?? 0) + 1;
    inFlight.set(socket, unanswered);
    res.once("close", () => inFlight.set(socket, (inFlight.get(socket) ?? 1) - 1));
    if (unanswered > limits.maxInFlightPerConnection) {
      req.resume();
      refuse(
        res,
        429,
        "in_flight_limit",
        `Too many requests in flight on this connection (at most ${limits.maxInFlightPerConnection}): read the answers before sending more\n`,
        true,
      );
      return;
    }
    serve(req, res);
  });

  const serve = (req: http.IncomingMessage, res: http.ServerResponse) => {
    if (!hostAllowed(req.headers.host)) {
      req.resume();
      refuse(
        res,
        403,
        "host",
        "Invalid Host header: the local chain answers requests to localhost, 127.0.0.1 and [::1] (add names with LOCAL_SOLANA_ALLOWED_HOSTS)\n",
      );
      return;
    }
    // A page of another origin is not served at all (a preflight neither): it gets no CORS grant
    // to read an answer, and a request it could send without a preflight is not run either.
    if (!cors.allows(req.headers.origin)) {
      req.resume();
      refuse(
        res,
        403,
        "origin",
        "Origin not allowed: the local chain answers pages served from localhost, 127.0.0.1 and [::1] (add origins with LOCAL_SOLANA_ALLOWED_ORIGINS)\n",
      );
      return;
    }
    if (req.method === "GET" && (req.url === "/health" || req.url?.startsWith("/health?"))) {
      send(res, 200, { "content-type": "text/plain" }, "ok");
      return;
    }
    if (req.method === "OPTIONS") {
      req.resume();
      send(res, 200, { allow: "POST, OPTIONS", "content-length": "0", ...cors.preflightHeaders(req) }, "");
      return;
    }
    if (req.method !== "POST") {
      req.resume();
      res.setHeader("allow", "POST, OPTIONS");
      refuse(res, 405, "method", "Used HTTP Method is not allowed. POST or OPTIONS is required\n");
      return;
    }
    if (writer.unsent >= limits.maxUnsentBytes) {
      req.resume();
      res.setHeader("retry-after", "1");
      refuse(
        res,
        503,
        "unsent_limit",
        `The local chain holds ${writer.unsent} bytes of answers its clients have not read yet (at most ${limits.maxUnsentBytes}): try again once they are read\n`,
      );
      return;
    }
    if (!JSON_CONTENT_TYPE.test(req.headers["content-type"] ?? "")) {
      req.resume();
      refuse(
        res,
        415,
        "content_type",
        "Supplied content type is not allowed. Content-Type: application/json is required\n",
      );
      return;
    }
    const declared = Number(req.headers["content-length"] ?? Number.NaN);
    if (declared > maxRequestBytes) {
      refuse(res, 413, "too_large", "Payload Too Large", true);
      req.destroy();
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let refused = false;
    req.on("data", (chunk: Buffer) => {
      if (refused) return;
      size += chunk.length;
      if (size > maxRequestBytes) {
        refused = true;
        refuse(res, 413, "too_large", "Payload Too Large", true);
        req.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.on("end", () => {
      if (refused) return;
      // The request boundary: this listener's promise has no one to reject to, and an escaped
      // rejection would end the whole process, the service's API with it.
      void answer(res, Buffer.concat(chunks, size).toString("utf8"), {
        address: req.socket.remoteAddress,
        port: req.socket.localPort,
      }).catch((error: unknown) => {
        unexpected(error, "unknown");
        try {
          if (res.headersSent) res.destroy();
          else sendJson(res, INTERNAL_ERROR_ANSWER);
        } catch {
          res.destroy();
        }
      });
    });
  };

  const answer = async (res: http.ServerResponse, body: string, caller: RpcCaller) => {
    const text = await handler.handle(body, caller);
    // As Agave's server writes it: the JSON, then a newline (nothing at all for notifications).
    sendJson(res, text === "" ? "" : `${text}\n`);
  };
  const sendJson = (res: http.ServerResponse, text: string) =>
    send(
      res,
      200,
      { "content-type": "application/json; charset=utf-8", "content-length": Buffer.byteLength(text) },
      text,
    );

  const port = await listen(server, options.port, HOST);
  return {
    url: `http://${HOST}:${port}`,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

import * as http from "node:http";
import type { AddressInfo } from "node:net";
import type { JsonRpcHandler } from "./json-rpc-handler.ts";

export interface LocalChainServerOptions {
  readonly handler: JsonRpcHandler;
  /** 0: any free port. */
  readonly port: number;
  /** Largest request body read; a larger one is refused with 413. */
  readonly maxRequestBytes: number;
  /** Told about requests turned away before JSON-RPC saw them: `too_large`, `method`, `content_type`. */
  readonly onRejected?: (reason: string) => void;
  /** Told about an error that escaped the JSON-RPC handler (its request answers -32603). */
  readonly onUnexpected?: (error: unknown, method: string) => void;
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
 * answering "ok". JSON-RPC errors are HTTP 200, as kit expects. Bodies are read up to a bound,
 * slow clients are cut off, and nothing listens on any other interface.
 */
export async function startLocalChainServer(options: LocalChainServerOptions): Promise<LocalChainServer> {
  const { handler, maxRequestBytes } = options;
  const rejected = options.onRejected ?? (() => {});
  const unexpected = options.onUnexpected ?? (() => {});
  const server = http.createServer({
    headersTimeout: 10_000,
    requestTimeout: 30_000,
    keepAliveTimeout: 5_000,
  });
  server.on("request", (req, res) => {
    if (req.method === "GET" && (req.url === "/health" || req.url?.startsWith("/health?"))) {
      res.writeHead(200, { "content-type": "text/plain" }).end("ok");
      return;
    }
    if (req.method === "OPTIONS") {
      req.resume();
      res.writeHead(200, { allow: "POST, OPTIONS", "content-length": "0" }).end();
      return;
    }
    if (req.method !== "POST") {
      rejected("method");
      req.resume();
      res
        .writeHead(405, { allow: "POST, OPTIONS", "content-type": "text/plain" })
        .end("Used HTTP Method is not allowed. POST or OPTIONS is required\n");
      return;
    }
    if (!JSON_CONTENT_TYPE.test(req.headers["content-type"] ?? "")) {
      rejected("content_type");
      req.resume();
      res
        .writeHead(415, { "content-type": "text/plain" })
        .end("Supplied content type is not allowed. Content-Type: application/json is required\n");
      return;
    }
    const declared = Number(req.headers["content-length"] ?? Number.NaN);
    if (declared > maxRequestBytes) {
      rejected("too_large");
      res.writeHead(413, { connection: "close", "content-type": "text/plain" }).end("Payload Too Large");
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
        rejected("too_large");
        res.writeHead(413, { connection: "close", "content-type": "text/plain" }).end("Payload Too Large");
        req.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.on("end", () => {
      if (refused) return;
      // The request boundary: this listener's promise has no one to reject to, and an escaped
      // rejection would end the whole process, the service's API with it.
      void answer(Buffer.concat(chunks, size).toString("utf8")).catch((error: unknown) => {
        unexpected(error, "unknown");
        try {
          if (res.headersSent) res.destroy();
          else write(INTERNAL_ERROR_ANSWER);
        } catch {
          res.destroy();
        }
      });
    });
    const answer = async (body: string) => {
      const text = await handler.handle(body);
      // As Agave's server writes it: the JSON, then a newline (nothing at all for notifications).
      write(text === "" ? "" : `${text}\n`);
    };
    const write = (text: string) => {
      res.writeHead(200, {
        "content-type": "application/json; charset=utf-8",
        "content-length": Buffer.byteLength(text),
      });
      res.end(text);
    };
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, HOST, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
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

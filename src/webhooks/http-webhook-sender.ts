import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from "node:dns";
import http from "node:http";
import https from "node:https";
import { addressRefusal, literalAddress } from "./address-policy.ts";

/** What one POST to an endpoint came to. */
export type SendResult =
  /** The endpoint answered with this status (a redirect is an answer, and is not followed). */
  | { readonly kind: "answered"; readonly status: number }
  /** Not sent: the endpoint's address is in a refused range (`reason` names it). */
  | { readonly kind: "refused"; readonly reason: string; readonly address: string }
  /** Sent, or tried, and no answer came: `error` says why, fit for the endpoint's owner. */
  | { readonly kind: "failed"; readonly error: string };

export interface WebhookRequest {
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
}

export interface WebhookSender {
  send(request: WebhookRequest): Promise<SendResult>;
  /** Closes idle connections. */
  close(): void;
}

/** Resolves a host name to every address it has (the system resolver by default). */
export type Resolve = (hostname: string) => Promise<readonly LookupAddress[]>;

const systemResolve: Resolve = (hostname) =>
  new Promise((resolve, reject) =>
    dnsLookup(hostname, { all: true, order: "verbatim" }, (err, addresses) =>
      err === null ? resolve(addresses) : reject(err),
    ),
  );

/** The resolved address was refused: the request never connects. */
class AddressRefusedError extends Error {
  readonly address: string;
  readonly reason: string;
  constructor(address: string, reason: string) {
    super(`address ${address} is ${reason}`);
    this.address = address;
    this.reason = reason;
  }
}

/** The connection was not made within the connect timeout. */
class ConnectTimeoutError extends Error {
  readonly timeoutMs: number;
  constructor(timeoutMs: number) {
    super(`no connection within ${timeoutMs} ms`);
    this.timeoutMs = timeoutMs;
  }
}

/**
 * POSTs webhooks with node:http(s), SSRF-safe: the host name is resolved here, every address it
 * resolves to is checked, and the connection goes to a checked address (the `lookup` the socket
 * uses is this one, so no second resolution can point it elsewhere: DNS rebinding finds nothing to
 * rebind). Literal addresses are checked before connecting. Redirects are never followed. Each
 * attempt is bounded in time from the first byte to the last, connecting (resolving, TCP, TLS) by
 * `connectTimeoutMs` within that, and the answer is read up to `maxResponseBytes` (the rest is not
 * read: the connection is dropped).
 */
export function createHttpWebhookSender(options: {
  readonly timeoutMs: number;
  /** At most `timeoutMs` in effect: the attempt's bound covers its connection too. */
  readonly connectTimeoutMs: number;
  readonly maxResponseBytes: number;
  readonly allowPrivateNetworks: boolean;
  /** Connections to one host at once (keep-alive). */
  readonly maxSocketsPerHost: number;
  readonly userAgent: string;
  readonly resolve?: Resolve;
}): WebhookSender {
  const { timeoutMs, maxResponseBytes, allowPrivateNetworks } = options;
  const resolve = options.resolve ?? systemResolve;
  const agentOptions = { keepAlive: true, maxSockets: options.maxSocketsPerHost, timeout: timeoutMs };
  const agents = { http: new http.Agent(agentOptions), https: new https.Agent(agentOptions) };

  const lookup = (
    hostname: string,
    lookupOptions: LookupOptions,
    callback: (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void,
  ): void => {
    resolve(hostname).then(
      (found) => {
        const wanted =
          lookupOptions.family === 4 || lookupOptions.family === 6 ? lookupOptions.family : undefined;
        const addresses = found.filter((a) => wanted === undefined || a.family === wanted);
        if (!allowPrivateNetworks) {
          // Every address, not just the first: the socket may try any of them.
          for (const a of addresses) {
            const reason = addressRefusal(a.address);
            if (reason !== undefined) return callback(new AddressRefusedError(a.address, reason), "", 0);
          }
        }
        const first = addresses[0];
        if (first === undefined) {
          const err: NodeJS.ErrnoException = new Error(`no address for ${hostname}`);
          err.code = "ENOTFOUND";
          return callback(err, "", 0);
        }
        if (lookupOptions.all === true) return callback(null, [...addresses]);
        return callback(null, first.address, first.family);
      },
      (err: NodeJS.ErrnoException) => callback(err, "", 0),
    );
  };

  return {
    send({ url, headers, body }) {
      const target = new URL(url);
      const literal = literalAddress(target.hostname);
      if (literal !== undefined && !allowPrivateNetworks) {
        const reason = addressRefusal(literal);
        if (reason !== undefined) return Promise.resolve({ kind: "refused", reason, address: literal });
      }
      const secure = target.protocol === "https:";
      return new Promise<SendResult>((settle) => {
        let status: number | undefined;
        let settled = false;
        const done = (result: SendResult) => {
          if (settled) return;
          settled = true;
          settle(result);
        };
        const request = (secure ? https : http).request(target, {
          method: "POST",
          agent: secure ? agents.https : agents.http,
          lookup,
          signal: AbortSignal.timeout(timeoutMs),
          headers: {
            ...headers,
            "content-type": "application/json",
            "content-length": String(Buffer.byteLength(body)),
            "user-agent": options.userAgent,
          },
        });
        if (options.connectTimeoutMs < timeoutMs) {
          request.on("socket", (socket) => {
            // A socket the agent kept alive is connected already.
            if (!socket.connecting) return;
            const timer = setTimeout(
              () => request.destroy(new ConnectTimeoutError(options.connectTimeoutMs)),
              options.connectTimeoutMs,
            );
            socket.once(secure ? "secureConnect" : "connect", () => clearTimeout(timer));
            socket.once("close", () => clearTimeout(timer));
          });
        }
        request.on("response", (response) => {
          status = response.statusCode ?? 0;
          let read = 0;
          response.on("data", (chunk: Buffer) => {
            read += chunk.length;
            // Enough: the status is what counts, and the connection is not worth the rest.
            if (read > maxResponseBytes) {
              response.destroy();
              done({ kind: "answered", status: status as number });
            }
          });
          response.on("end", () => done({ kind: "answered", status: status as number }));
          response.on("error", () => done({ kind: "answered", status: status as number }));
        });
        request.on("error", (err: NodeJS.ErrnoException) => {
          if (status !== undefined) return done({ kind: "answered", status });
          if (err instanceof AddressRefusedError) {
            return done({ kind: "refused", reason: err.reason, address: err.address });
          }
          done({ kind: "failed", error: describeFailure(err, timeoutMs) });
        });
        request.end(body);
      });
    },
    close() {
      agents.http.destroy();
      agents.https.destroy();
    },
  };
}

/** Why a request got no answer, in words fit for the endpoint's owner (never a stack or a raw message). */
function describeFailure(err: NodeJS.ErrnoException, timeoutMs: number): string {
  if (err instanceof ConnectTimeoutError) return err.message;
  if (err.name === "AbortError" || err.name === "TimeoutError" || err.code === "ABORT_ERR") {
    return `no answer within ${timeoutMs} ms`;
  }
  switch (err.code) {
    case "ECONNREFUSED":
      return "connection refused";
    case "ECONNRESET":
    case "EPIPE":
      return "connection reset";
    case "ENOTFOUND":
    case "EAI_AGAIN":
    case "EAI_NONAME":
      return "host not found";
    case "ETIMEDOUT":
    case "ENETUNREACH":
    case "EHOSTUNREACH":
      return "host unreachable";
    default:
      if (err.code !== undefined && /CERT|TLS|SSL|SELF_SIGNED|UNABLE_TO_VERIFY/.test(err.code)) {
        return `TLS failed (${err.code})`;
      }
      return err.code === undefined ? "request failed" : `request failed (${err.code})`;
  }
}

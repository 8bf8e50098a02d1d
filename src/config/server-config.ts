/** The server itself: where it listens, its logs, CORS, request bounds and HTTP limits. */
import type { ConfigReader } from "./config-reader.ts";
import { parseOrigins } from "./config-urls.ts";

export const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** Bounds on what one client can hold of the server: connections, streams, and slow requests. */
export interface HttpLimits {
  /** Open connections accepted at once; more are closed on arrival. Keep it below `ulimit -n`. */
  readonly maxConnections: number;
  /** Streams one HTTP/2 connection may have open at once (advertised in SETTINGS). */
  readonly maxConcurrentStreams: number;
  /** Time a client has to send a request's headers. */
  readonly headersTimeoutMs: number;
  /** Time a client has to send a whole request, body included (client-streaming calls excepted). */
  readonly requestTimeoutMs: number;
  /** A connection with nothing in flight is closed after this long. */
  readonly idleTimeoutMs: number;
}

export interface ServerConfig {
  readonly host: string;
  readonly port: number;
  readonly logLevel: LogLevel;
  /** Log bytes held while stdout does not keep up; lines past it are dropped and counted. */
  readonly logBufferBytes: number;
  /** Origins allowed to call from a browser; ["*"] allows any. Empty: no CORS headers at all. */
  readonly corsOrigins: readonly string[];
  /** Largest request message accepted, in bytes. */
  readonly maxRequestBytes: number;
  /**
   * Serve unary calls on the lean path (src/lean/); false sends every call through connect-node's
   * handlers, a switch for ruling the lean path in or out when a call misbehaves.
   */
  readonly leanUnary: boolean;
  /** How long calls in flight may take to finish after SIGTERM before connections are cut. */
  readonly shutdownTimeoutMs: number;
  readonly http: HttpLimits;
}

export function readServer(reader: ConfigReader): ServerConfig {
  const { read, int, bool, problems } = reader;
  const host = read("HOST");
  const port = int("PORT", 0, 65535);
  const logLevel = read("LOG_LEVEL").toLowerCase();
  if (!(LOG_LEVELS as readonly string[]).includes(logLevel)) {
    problems.push(`LOG_LEVEL must be one of ${LOG_LEVELS.join(", ")} (got "${logLevel}")`);
  }
  const logBufferBytes = int("LOG_BUFFER_BYTES", 1024, 1024 * 1024 * 1024);
  const corsOrigins = parseOrigins(read("CORS_ORIGINS"), problems);
  const maxRequestBytes = int("MAX_REQUEST_BYTES", 1024, 64 * 1024 * 1024);
  const shutdownTimeoutMs = int("SHUTDOWN_TIMEOUT_MS", 0, 600_000);
  const leanUnary = bool("LEAN_UNARY");
  const http: HttpLimits = {
    maxConnections: int("MAX_CONNECTIONS", 1, 1_000_000),
    maxConcurrentStreams: int("HTTP2_MAX_CONCURRENT_STREAMS", 1, 10_000),
    headersTimeoutMs: int("HEADERS_TIMEOUT_MS", 100, 600_000),
    requestTimeoutMs: int("REQUEST_TIMEOUT_MS", 100, 3_600_000),
    idleTimeoutMs: int("IDLE_TIMEOUT_MS", 100, 3_600_000),
  };
  return {
    host,
    port,
    logLevel: logLevel as LogLevel,
    logBufferBytes,
    corsOrigins,
    maxRequestBytes,
    leanUnary,
    shutdownTimeoutMs,
    http,
  };
}

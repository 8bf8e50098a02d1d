import type { RpcTransport } from "@solana/kit";
import { readBounded } from "../upstream/bounded-body.ts";
import { retryAfterOf } from "../upstream/retry-after.ts";
import { parseJsonBigInts, stringifyJsonBigInts } from "./json-bigints.ts";
import { TransportError } from "./transport-error.ts";

export interface HttpTransportOptions {
  /** The cluster's JSON-RPC endpoint; it may carry the provider's key, so it never appears in errors. */
  readonly url: string;
  /** Bound on one request, answer included. */
  readonly timeoutMs: number;
  /** Largest answer read; a larger one fails as `too_large` without being read to the end. */
  readonly maxResponseBytes: number;
}

/**
 * A @solana/kit RPC transport over HTTP, as kit's own (`createHttpTransportForSolanaRpc`: a JSON
 * POST, u64 values as bare integers both ways), with what kit's leaves to the caller: a timeout on
 * every request, an answer read only up to a bound, and failures sorted into TransportErrors
 * (with the wait a 429 asked for), so the resilient transport above it can decide what to retry.
 */
export function createHttpTransport(options: HttpTransportOptions): RpcTransport {
  const { url, timeoutMs, maxResponseBytes } = options;
  const headers = { accept: "application/json", "content-type": "application/json; charset=utf-8" };
  return (async ({ payload, signal }) => {
    signal?.throwIfAborted();
    const timeout = AbortSignal.timeout(timeoutMs);
    const both = signal === undefined ? timeout : AbortSignal.any([signal, timeout]);
    const failed = (error: unknown): never => {
      if (signal?.aborted === true) throw signal.reason;
      if (timeout.aborted) {
        throw new TransportError("timeout", `the Solana RPC did not answer within ${timeoutMs} ms`, {
          cause: error,
        });
      }
      if (error instanceof TransportError) throw error;
      throw new TransportError("unreachable", "the Solana RPC cannot be reached", { cause: error });
    };
    let response: Response;
    try {
      response = await fetch(url, {
        method: "POST",
        headers,
        body: stringifyJsonBigInts(payload),
        signal: both,
      });
    } catch (error) {
      return failed(error);
    }
    if (!response.ok) {
      // The body is not needed; cancel it so the connection is not held reading it.
      void response.body?.cancel().catch(() => {});
      const status = response.status;
      const retryAfterMs = retryAfterOf(response.headers.get("retry-after"));
      throw new TransportError(
        status === 429 ? "rate_limited" : "http_error",
        `the Solana RPC answered HTTP ${status}`,
        { status, ...(retryAfterMs === undefined ? {} : { retryAfterMs }) },
      );
    }
    let text: string;
    try {
      text = await readBounded(
        response,
        maxResponseBytes,
        () => new TransportError("too_large", `the Solana RPC answered more than ${maxResponseBytes} bytes`),
      );
    } catch (error) {
      return failed(error);
    }
    try {
      const parsed = parseJsonBigInts(text);
      if (typeof parsed !== "object" || parsed === null) throw new SyntaxError("not a JSON-RPC answer");
      return parsed;
    } catch (error) {
      throw new TransportError("bad_response", "the Solana RPC answered something that is not JSON-RPC", {
        cause: error,
      });
    }
  }) as RpcTransport;
}

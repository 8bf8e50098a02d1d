import { setTimeout as sleep } from "node:timers/promises";
import type { RpcTransport } from "@solana/kit";
import { retryDelayMs } from "../domain/backoff.ts";
import { UnavailableError } from "../domain/errors.ts";
import { TransportError, type TransportFailure } from "./transport-error.ts";

/** How one request to the cluster ended, as metrics count it. */
export type RequestOutcome =
  | "ok"
  /** The cluster answered with a JSON-RPC error. */
  | "rpc_error"
  | TransportFailure
  /** Refused before it was sent: too many requests already waiting, or a 429's wait too long. */
  | "overloaded"
  /** The caller went away (its deadline passed, it cancelled). */
  | "cancelled";

export interface ResilientTransportOptions {
  readonly transport: RpcTransport;
  /** Requests in flight at once. */
  readonly maxConcurrency: number;
  /** Requests waiting for a turn; past it, requests fail at once as unavailable. */
  readonly maxQueued: number;
  /** Further attempts after a retryable failure (429, 5xx, a lost connection). */
  readonly maxRetries: number;
  /** First backoff step; each retry doubles it, with full jitter. */
  readonly retryBaseMs: number;
  /** Longest wait a 429's Retry-After may impose; a longer one fails the request at once. */
  readonly maxRetryWaitMs: number;
  /** Told about every attempt (and every refusal): JSON-RPC method, outcome, seconds taken. */
  readonly onRequest?: (method: string, outcome: RequestOutcome, seconds: number) => void;
  readonly random?: () => number;
}

/**
 * Wraps a transport with what calling a shared cluster needs: bounded concurrency (a bounded
 * queue behind it, so a slow cluster cannot pile up unbounded work), retries with exponential
 * backoff and jitter for failures that may pass (429, 5xx, a lost connection), and Retry-After:
 * a 429 that asks for a wait makes every request wait it out (it applies to the client, not to one
 * request) as long as the wait is short enough, and fail at once as unavailable otherwise.
 *
 * Transport failures become UnavailableError with a message safe to show; the caller's abort (its
 * deadline) is rethrown as is. JSON-RPC errors pass through to kit, which raises them.
 */
export function createResilientTransport(options: ResilientTransportOptions): RpcTransport {
  const { transport, maxConcurrency, maxQueued, maxRetries, retryBaseMs, maxRetryWaitMs } = options;
  const onRequest = options.onRequest ?? (() => {});
  const random = options.random ?? Math.random;
  let active = 0;
  const waiting: (() => void)[] = [];
  /** performance.now() before which the cluster asked not to be called (its last Retry-After). */
  let coolUntil = 0;

  const acquire = async (method: string, signal: AbortSignal | undefined): Promise<void> => {
    if (active < maxConcurrency) {
      active++;
      return;
    }
    if (waiting.length >= maxQueued) {
      onRequest(method, "overloaded", 0);
      throw new UnavailableError("too many Solana RPC requests are waiting; try again shortly");
    }
    await new Promise<void>((resolve, reject) => {
      const turn = () => {
        signal?.removeEventListener("abort", abort);
        resolve();
      };
      const abort = () => {
        const at = waiting.indexOf(turn);
        if (at >= 0) waiting.splice(at, 1);
        reject(signal?.reason);
      };
      waiting.push(turn);
      signal?.addEventListener("abort", abort, { once: true });
    });
  };
  const release = () => {
    const next = waiting.shift();
    if (next === undefined) active--;
    else next();
  };

  /** Waits until the cluster's Retry-After has passed, or fails at once if that is too long. */
  const coolDown = async (method: string, signal: AbortSignal | undefined): Promise<void> => {
    const wait = coolUntil - performance.now();
    if (wait <= 0) return;
    if (wait > maxRetryWaitMs) {
      onRequest(method, "overloaded", 0);
      throw new UnavailableError(
        `the Solana RPC is rate limiting this service for another ${Math.ceil(wait / 1000)} s`,
      );
    }
    await sleep(wait, undefined, signal === undefined ? {} : { signal });
  };

  return (async (request) => {
    const { payload, signal } = request;
    const method = methodOf(payload);
    for (let attempt = 1; ; attempt++) {
      const started = performance.now();
      let failure: TransportError;
      try {
        await coolDown(method, signal);
        await acquire(method, signal);
      } catch (error) {
        if (signal?.aborted !== true) throw error;
        onRequest(method, "cancelled", 0);
        throw signal.reason;
      }
      try {
        const response = await transport(request);
        onRequest(method, hasRpcError(response) ? "rpc_error" : "ok", seconds(started));
        return response;
      } catch (error) {
        if (signal?.aborted === true || !(error instanceof TransportError)) {
          onRequest(method, signal?.aborted === true ? "cancelled" : "bad_response", seconds(started));
          throw error;
        }
        onRequest(method, error.failure, seconds(started));
        failure = error;
      } finally {
        release();
      }
      const asked = failure.retryAfterMs;
      if (asked !== undefined) coolUntil = Math.max(coolUntil, performance.now() + asked);
      const tooLong = asked !== undefined && asked > maxRetryWaitMs;
      if (!failure.retryable || attempt > maxRetries || tooLong) {
        throw new UnavailableError(unavailableMessage(failure, tooLong), { cause: failure });
      }
      const backoff = retryDelayMs(attempt, { baseMs: retryBaseMs, maxMs: maxRetryWaitMs, random });
      try {
        await sleep(Math.max(backoff, asked ?? 0), undefined, signal === undefined ? {} : { signal });
      } catch {
        throw signal?.reason;
      }
    }
  }) as RpcTransport;
}

function methodOf(payload: unknown): string {
  const method = (payload as { method?: unknown } | null)?.method;
  return typeof method === "string" ? method : "unknown";
}

function hasRpcError(response: unknown): boolean {
  return typeof response === "object" && response !== null && "error" in response;
}

function seconds(started: number): number {
  return (performance.now() - started) / 1000;
}

function unavailableMessage(failure: TransportError, waitTooLong: boolean): string {
  if (waitTooLong) {
    return `the Solana RPC is rate limiting this service for ${Math.ceil((failure.retryAfterMs ?? 0) / 1000)} s`;
  }
  switch (failure.failure) {
    case "timeout":
      return "the Solana RPC did not answer in time";
    case "unreachable":
      return "the Solana RPC cannot be reached";
    case "rate_limited":
      return "the Solana RPC is rate limiting this service";
    case "http_error":
      return `the Solana RPC answered HTTP ${failure.status ?? "error"}`;
    case "too_large":
    case "bad_response":
      return "the Solana RPC answered something this service cannot read";
  }
}

import {
  BrokenCircuitError,
  BulkheadRejectedError,
  bulkhead,
  CircuitState,
  ConsecutiveBreaker,
  circuitBreaker,
  handleWhen,
  wrap,
} from "cockatiel";
import { readBounded } from "./bounded-body.ts";
import { retryAfterOf } from "./retry-after.ts";

/** How one call to an upstream HTTP API ended, as metrics count it. */
export type UpstreamOutcome =
  | "ok"
  /** No answer within the timeout. */
  | "timeout"
  /** No connection: refused, reset, DNS, TLS. */
  | "unreachable"
  /** HTTP 429, or a call not made while a 429's Retry-After lasts. */
  | "rate_limited"
  /** Any other status but 2xx. */
  | "http_error"
  /** An answer larger than the bound. */
  | "too_large"
  /** An answer that is not JSON. */
  | "bad_response"
  /**
   * A 4xx answer the caller asked to read (`readRejections`): the upstream refused this request
   * (a swap with no route), which says nothing about its health.
   */
  | "rejected"
  /** The caller's signal aborted the call before an answer. */
  | "aborted"
  /** Not made: the circuit breaker is open after consecutive failures. */
  | "circuit_open"
  /** Not made: too many calls already waiting for a turn. */
  | "overloaded";

export type CircuitPosition = "closed" | "open" | "half_open";

/**
 * A call to an upstream failed. The message is safe to log and to show (never the URL or the
 * key); what the platform threw stays in `cause`.
 */
export class UpstreamError extends Error {
  override readonly name = "UpstreamError";
  readonly outcome: Exclude<UpstreamOutcome, "ok">;
  /** For `rate_limited`: how long the upstream asked to be left alone, in ms. */
  readonly retryAfterMs: number | undefined;
  /** For `rejected`: the HTTP status and the answer parsed as JSON (upstream text: never show it as is). */
  readonly status: number | undefined;
  readonly body: unknown;

  constructor(
    outcome: Exclude<UpstreamOutcome, "ok">,
    message: string,
    options: { retryAfterMs?: number; cause?: unknown; status?: number; body?: unknown } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.outcome = outcome;
    this.retryAfterMs = options.retryAfterMs;
    this.status = options.status;
    this.body = options.body;
  }

  /** Failures that say the upstream is unwell, and count towards opening the circuit. */
  get isUpstreamFault(): boolean {
    return (
      this.outcome !== "rate_limited" &&
      this.outcome !== "circuit_open" &&
      this.outcome !== "overloaded" &&
      this.outcome !== "rejected" &&
      this.outcome !== "aborted"
    );
  }
}

export interface JsonUpstreamOptions {
  /** How messages name the upstream, for example "Jupiter". */
  readonly name: string;
  /** Scheme, host and path prefix; calls append their path to it. */
  readonly baseUrl: string;
  /** Sent with every call (an API key); never logged. */
  readonly headers?: Readonly<Record<string, string>>;
  /** Bound on one call, answer included. */
  readonly timeoutMs: number;
  /** Calls in flight at once, and calls waiting for a turn; past both, calls fail at once. */
  readonly maxConcurrency: number;
  readonly maxQueued: number;
  /** Consecutive failures that open the circuit, and how long it stays open before a trial call. */
  readonly breaker: { readonly failures: number; readonly openMs: number };
  /** A 429 without Retry-After leaves the upstream alone this long. */
  readonly defaultRetryAfterMs: number;
  /** Told about every call, made or refused: its endpoint label, outcome and seconds taken. */
  readonly onCall?: (endpoint: string, outcome: UpstreamOutcome, seconds: number) => void;
  /** Told about every change of the circuit's position. */
  readonly onCircuit?: (position: CircuitPosition) => void;
  /** The fetch to call (tests, or a dispatcher with its own connection pool); the global one if absent. */
  readonly fetch?: typeof fetch;
}

/** What one call may add to the upstream's defaults. */
export interface JsonCallOptions {
  /** The caller's own abort (a shutdown, a run's deadline); the upstream's timeout applies as well. */
  readonly signal?: AbortSignal;
  /**
   * 4xx statuses (not 429) whose JSON answer the caller wants to read, because the upstream uses
   * them to say "not this request" (Jupiter's "no route"). They fail as `rejected` with the parsed
   * body, read within the same bound, and do not count against the upstream's health.
   */
  readonly readRejections?: readonly number[];
}

export interface JsonUpstream {
  /**
   * GETs `path` (with its query) and parses the answer as JSON, reading at most `maxBytes`.
   * `endpoint` labels the call in metrics. Throws UpstreamError.
   */
  getJson(endpoint: string, path: string, maxBytes: number, call?: JsonCallOptions): Promise<unknown>;
}

/**
 * A read-only JSON API over HTTP with what calling someone else's service needs: a timeout on
 * every call, answers read only up to a bound, bounded concurrency with a bounded queue
 * (cockatiel's bulkhead), a circuit breaker that stops calling an upstream after consecutive
 * failures and tries one call after a while (cockatiel's), and Retry-After: a 429 makes every call
 * wait out the time the upstream asked for by not being made. Calls are not retried here: the
 * callers (caches that serve stale values while they revalidate) decide when to call again.
 */
export function createJsonUpstream(options: JsonUpstreamOptions): JsonUpstream {
  const { name, baseUrl, timeoutMs } = options;
  const onCall = options.onCall ?? (() => {});
  const fetchFn = options.fetch ?? fetch;
  const headers = { accept: "application/json", ...options.headers };
  const breaker = circuitBreaker(
    handleWhen((error) => error instanceof UpstreamError && error.isUpstreamFault),
    { halfOpenAfter: options.breaker.openMs, breaker: new ConsecutiveBreaker(options.breaker.failures) },
  );
  breaker.onStateChange((state) => options.onCircuit?.(positionOf(state)));
  const policy = wrap(breaker, bulkhead(options.maxConcurrency, options.maxQueued));
  /** Date.now() before which the upstream asked not to be called (its last 429). */
  let coolUntil = 0;

  const call = async (path: string, maxBytes: number, callOptions: JsonCallOptions): Promise<unknown> => {
    const timeout = AbortSignal.timeout(timeoutMs);
    const { signal: callerSignal } = callOptions;
    const signal = callerSignal === undefined ? timeout : AbortSignal.any([timeout, callerSignal]);
    const failed = (error: unknown): never => {
      if (error instanceof UpstreamError) throw error;
      if (callerSignal?.aborted === true && !timeout.aborted) {
        throw new UpstreamError("aborted", `the call to ${name} was abandoned`, { cause: error });
      }
      if (timeout.aborted) {
        throw new UpstreamError("timeout", `${name} did not answer within ${timeoutMs} ms`, { cause: error });
      }
      throw new UpstreamError("unreachable", `${name} cannot be reached`, { cause: error });
    };
    try {
      signal.throwIfAborted();
      const response = await fetchFn(`${baseUrl}${path}`, { headers, signal, redirect: "error" });
      if (response.status === 429) {
        void response.body?.cancel().catch(() => {});
        const asked = retryAfterOf(response.headers.get("retry-after")) ?? options.defaultRetryAfterMs;
        coolUntil = Math.max(coolUntil, Date.now() + asked);
        throw new UpstreamError("rate_limited", `${name} is rate limiting this service`, {
          retryAfterMs: asked,
        });
      }
      if (callOptions.readRejections?.includes(response.status) === true) {
        const body = parseJson(
          await readBounded(response, maxBytes, () => tooLarge(name, maxBytes)),
          () => undefined,
        );
        throw new UpstreamError("rejected", `${name} refused the request (HTTP ${response.status})`, {
          status: response.status,
          body,
        });
      }
      if (!response.ok) {
        void response.body?.cancel().catch(() => {});
        throw new UpstreamError("http_error", `${name} answered HTTP ${response.status}`);
      }
      const text = await readBounded(response, maxBytes, () => tooLarge(name, maxBytes));
      return parseJson(text, (error) => {
        throw new UpstreamError("bad_response", `${name} answered something that is not JSON`, {
          cause: error,
        });
      });
    } catch (error) {
      return failed(error);
    }
  };

  return {
    async getJson(endpoint, path, maxBytes, callOptions = {}) {
      const started = performance.now();
      const wait = coolUntil - Date.now();
      if (wait > 0) {
        onCall(endpoint, "rate_limited", 0);
        throw new UpstreamError(
          "rate_limited",
          `${name} is rate limiting this service for another ${Math.ceil(wait / 1000)} s`,
          { retryAfterMs: wait },
        );
      }
      try {
        const answer = await policy.execute(() => call(path, maxBytes, callOptions));
        onCall(endpoint, "ok", seconds(started));
        return answer;
      } catch (error) {
        const refused = refusal(name, error);
        if (refused !== undefined) {
          onCall(endpoint, refused.outcome, 0);
          throw refused;
        }
        const failure =
          error instanceof UpstreamError
            ? error
            : new UpstreamError("bad_response", `${name} failed`, { cause: error });
        onCall(endpoint, failure.outcome, seconds(started));
        throw failure;
      }
    },
  };
}

function tooLarge(name: string, maxBytes: number): UpstreamError {
  return new UpstreamError("too_large", `${name} answered more than ${maxBytes} bytes`);
}

/** `text` parsed as JSON, or what `notJson` makes of the parse error. */
function parseJson(text: string, notJson: (error: unknown) => unknown): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    return notJson(error);
  }
}

/** cockatiel's refusals (circuit open, bulkhead full) as UpstreamErrors; undefined for others. */
function refusal(name: string, error: unknown): UpstreamError | undefined {
  if (error instanceof BrokenCircuitError) {
    return new UpstreamError("circuit_open", `${name} is failing; calls to it are paused for a while`);
  }
  if (error instanceof BulkheadRejectedError) {
    return new UpstreamError("overloaded", `too many ${name} requests are waiting; try again shortly`);
  }
  return undefined;
}

function positionOf(state: CircuitState): CircuitPosition {
  switch (state) {
    case CircuitState.Closed:
      return "closed";
    case CircuitState.HalfOpen:
      return "half_open";
    default:
      return "open";
  }
}

function seconds(started: number): number {
  return (performance.now() - started) / 1000;
}

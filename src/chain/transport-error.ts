/** How a JSON-RPC request to a cluster failed before any JSON-RPC answer came back. */
export type TransportFailure =
  /** No answer within the request's timeout. */
  | "timeout"
  /** No connection: refused, reset, DNS, TLS. */
  | "unreachable"
  /** HTTP 429. */
  | "rate_limited"
  /** Any other HTTP status but 200. */
  | "http_error"
  /** An answer larger than the configured bound. */
  | "too_large"
  /** An answer that is not JSON-RPC. */
  | "bad_response";

/**
 * A request to the cluster failed at the transport. The message is safe to log (never the URL,
 * which may carry the provider's key); what the platform threw stays in `cause`.
 */
export class TransportError extends Error {
  override readonly name = "TransportError";
  readonly failure: TransportFailure;
  /** HTTP status, for `http_error` and `rate_limited`. */
  readonly status: number | undefined;
  /** The wait the cluster asked for (Retry-After), in milliseconds. */
  readonly retryAfterMs: number | undefined;

  constructor(
    failure: TransportFailure,
    message: string,
    options: { status?: number; retryAfterMs?: number; cause?: unknown } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.failure = failure;
    this.status = options.status;
    this.retryAfterMs = options.retryAfterMs;
  }

  /** True for failures another attempt may not meet: 429, 5xx, and lost connections. */
  get retryable(): boolean {
    return (
      this.failure === "rate_limited" ||
      this.failure === "unreachable" ||
      (this.failure === "http_error" && this.status !== undefined && this.status >= 500)
    );
  }
}

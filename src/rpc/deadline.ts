import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";

/**
 * The longest deadline honoured: a day. Larger ones (the protocols allow up to ~3 years for
 * connect-timeout-ms and ~1000 years for grpc-timeout) would overflow Node's timers, which then
 * warn on every request and fire at once.
 */
export const MAX_DEADLINE_MS = 86_400_000;

const CONNECT_TIMEOUT = "connect-timeout-ms";
const GRPC_TIMEOUT = "grpc-timeout";
const GRPC_UNITS: Record<string, number> = { H: 3_600_000, M: 60_000, S: 1_000, m: 1, u: 0.001, n: 0.000001 };

/**
 * Rewrites a deadline header above MAX_DEADLINE_MS to that maximum, in place, before connect
 * reads it. Malformed values are left for connect to refuse.
 */
export function clampDeadlineHeaders(headers: Record<string, string | string[] | undefined>): void {
  const connect = headers[CONNECT_TIMEOUT];
  if (typeof connect === "string" && /^\d{1,10}$/.test(connect) && Number(connect) > MAX_DEADLINE_MS) {
    headers[CONNECT_TIMEOUT] = String(MAX_DEADLINE_MS);
  }
  const grpc = headers[GRPC_TIMEOUT];
  if (typeof grpc === "string") {
    const ms = grpcTimeoutMs(grpc);
    if (ms !== undefined && ms > MAX_DEADLINE_MS) headers[GRPC_TIMEOUT] = `${MAX_DEADLINE_MS}m`;
  }
}

/** The call's timeout in ms from its headers, or undefined when it has none (or a malformed one). */
export function timeoutMsOf(header: Headers): number | undefined {
  const connect = header.get(CONNECT_TIMEOUT);
  if (connect !== null) return /^\d{1,10}$/.test(connect) ? Number(connect) : undefined;
  const grpc = header.get(GRPC_TIMEOUT);
  return grpc === null ? undefined : grpcTimeoutMs(grpc);
}

function grpcTimeoutMs(value: string): number | undefined {
  const match = /^(\d{1,8})([HMSmun])$/.exec(value);
  if (match === null) return undefined;
  return Number(match[1]) * (GRPC_UNITS[match[2] as string] as number);
}

/**
 * deadline_exceeded for a call that answers after its deadline. connect aborts the handler's
 * signal when the deadline passes, but a handler that does not watch the signal (or answers within
 * the same tick) would still be answered with success; callers that gave up must not be told a
 * late answer succeeded, and every protocol must agree.
 */
export function createDeadlineInterceptor(): Interceptor {
  return (next) => (req) => {
    // connect has parsed the deadline already and aborts the call's signal when it passes; the
    // header is read too for the answer that comes before that timer could fire. A call without
    // a deadline header has no deadline (connect sets none), so it passes straight through.
    const timeoutMs = timeoutMsOf(req.header);
    return timeoutMs === undefined ? next(req) : withinDeadline(next, req, timeoutMs);
  };
}

async function withinDeadline(
  next: Parameters<Interceptor>[0],
  req: Parameters<Parameters<Interceptor>[0]>[0],
  timeoutMs: number,
): ReturnType<Parameters<Interceptor>[0]> {
  const deadline = performance.now() + timeoutMs;
  const passed = () =>
    performance.now() > deadline ||
    (req.signal.aborted && ConnectError.from(req.signal.reason).code === Code.DeadlineExceeded);
  const late = () =>
    new ConnectError(
      `the deadline of ${timeoutMs} ms passed before the call completed`,
      Code.DeadlineExceeded,
    );
  let res: Awaited<ReturnType<typeof next>>;
  try {
    res = await next(req);
  } catch (error) {
    // A late failure is as late as a late success.
    if (passed()) throw late();
    throw error;
  }
  if (passed()) throw late();
  return res;
}

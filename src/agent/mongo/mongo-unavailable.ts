/**
 * Which driver errors mean "the database cannot be reached right now": the one test every MongoDB
 * adapter maps to UnavailableError (anything else propagates unchanged).
 */
import {
  MongoClientClosedError,
  MongoError,
  MongoErrorLabel,
  MongoNetworkError,
  MongoNotConnectedError,
  MongoServerClosedError,
  MongoServerSelectionError,
  MongoTopologyClosedError,
} from "mongodb";

/**
 * Server error codes meaning the server is shutting down, stepping down or unreachable behind a
 * router: the retryable-read codes of the driver's (internal) MONGODB_ERROR_CODES.
 */
const UNAVAILABLE_CODES: ReadonlySet<number> = new Set([
  6, // HostUnreachable
  7, // HostNotFound
  89, // NetworkTimeout
  91, // ShutdownInProgress
  134, // ReadConcernMajorityNotAvailableYet
  189, // PrimarySteppedDown
  262, // ExceededTimeLimit
  9001, // SocketException
  10107, // NotWritablePrimary
  11600, // InterruptedAtShutdown
  11602, // InterruptedDueToReplStateChange
  13435, // NotPrimaryNoSecondaryOk
  13436, // NotPrimaryOrSecondary
]);

/** Labels the driver or server put on errors that a retry against a recovered server may fix. */
const UNAVAILABLE_LABELS: readonly string[] = [
  MongoErrorLabel.RetryableError,
  MongoErrorLabel.RetryableWriteError,
  MongoErrorLabel.ResetPool,
  MongoErrorLabel.PoolRequestedRetry,
  MongoErrorLabel.SystemOverloadedError,
];

/** Driver errors not exported as classes, matched by name. */
const UNAVAILABLE_NAMES: ReadonlySet<string> = new Set([
  "MongoPoolClosedError",
  "MongoPoolClearedError",
  "PoolClearedOnNetworkError",
  "MongoWaitQueueTimeoutError",
]);

/**
 * Node socket errors. mongodb 7.9 lets some escape unwrapped: a command written to a connection the
 * server has just closed rejects with Node's own EPIPE "This socket has been ended by the other
 * party" instead of a MongoNetworkError.
 */
const SOCKET_ERROR_CODES: ReadonlySet<string> = new Set([
  "EPIPE",
  "ECONNRESET",
  "ECONNREFUSED",
  "ECONNABORTED",
  "ETIMEDOUT",
  "ENOTCONN",
  "EHOSTUNREACH",
  "EHOSTDOWN",
  "ENETUNREACH",
  "ENETDOWN",
  "EAI_AGAIN",
  "ERR_SOCKET_CLOSED",
  "ERR_STREAM_DESTROYED",
  "ERR_STREAM_WRITE_AFTER_END",
]);

/** True when `err` means the database cannot be reached right now (or the connection dropped). */
export function isUnavailableError(err: unknown): boolean {
  if (!(err instanceof MongoError)) {
    const code = err instanceof Error ? (err as NodeJS.ErrnoException).code : undefined;
    return typeof code === "string" && SOCKET_ERROR_CODES.has(code);
  }
  if (
    err instanceof MongoServerSelectionError ||
    err instanceof MongoNetworkError || // includes MongoNetworkTimeoutError and pool-cleared errors
    err instanceof MongoTopologyClosedError ||
    err instanceof MongoNotConnectedError ||
    err instanceof MongoServerClosedError ||
    err instanceof MongoClientClosedError
  ) {
    return true;
  }
  if (UNAVAILABLE_NAMES.has(err.name)) return true;
  if (UNAVAILABLE_LABELS.some((label) => err.hasErrorLabel(label))) return true;
  return typeof err.code === "number" && UNAVAILABLE_CODES.has(err.code);
}

/**
 * Domain errors. Domain and storage code throw these; the RPC layer alone turns them into Connect
 * codes (see `connect-error-from.ts`), so no transport type leaks below it.
 */

/** One rule broken by one field of a request. `field` is the JSON path, e.g. `config.amount`. */
export interface FieldViolation {
  readonly field: string;
  readonly description: string;
}

/**
 * The request itself is wrong: it carries one violation per bad field. Maps to invalid_argument.
 *
 * Messages avoid the characters `; / ? : @ & = + $ , #`. Over gRPC the message travels in the
 * grpc-message trailer, which connect-node percent-encodes with encodeURIComponent and grpc-js
 * decodes with decodeURI, which leaves exactly those characters encoded ("mint%3A ..."). Without
 * them, every client shows the same plain text.
 */
export class InvalidArgumentError extends Error {
  override readonly name = "InvalidArgumentError";
  readonly violations: readonly FieldViolation[];

  constructor(violations: readonly FieldViolation[]) {
    super(violations.map((v) => `${v.field} ${v.description}`).join(". "));
    this.violations = violations;
  }

  /** Shorthand for the common single-field case. */
  static field(field: string, description: string): InvalidArgumentError {
    return new InvalidArgumentError([{ field, description }]);
  }
}

/** Longest piece of a caller's value quoted back in a message. */
const QUOTE_MAX_CHARS = 40;

/**
 * A caller's value as it may appear in an error message: quoted, and cut to a short prefix with
 * its length when long. Errors never echo input at full length: a 900 KB value would make a 900 KB
 * error (and, over gRPC, trailers too large to deliver at all).
 *
 * The quote is well-formed UTF-16: the cut never splits a surrogate pair, and lone surrogates
 * (JSON can carry them as `\ud800` escapes) become U+FFFD. Over gRPC the message is
 * percent-encoded into a trailer, and a lone surrogate makes that encoding throw, which left the
 * call reset or unanswered instead of invalid_argument.
 */
export function quote(value: string): string {
  const text = value.toWellFormed();
  if (text.length <= QUOTE_MAX_CHARS) return `"${text}"`;
  const end = isHighSurrogate(text.charCodeAt(QUOTE_MAX_CHARS - 1)) ? QUOTE_MAX_CHARS - 1 : QUOTE_MAX_CHARS;
  return `"${text.slice(0, end)}…" (${value.length} characters)`;
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

/** `"a" or "b" or "c"`: allowed values in a message (see InvalidArgumentError on punctuation). */
export function alternatives(values: readonly string[]): string {
  return values.map((value) => `"${value}"`).join(" or ");
}

/**
 * The request is valid, but the state of the thing it is about does not allow it (pausing a
 * pending agent, say). Maps to failed_precondition; the message names the current state.
 */
export class FailedPreconditionError extends Error {
  override readonly name = "FailedPreconditionError";
}

/** The thing asked for does not exist (for this caller). Maps to not_found. */
export class NotFoundError extends Error {
  override readonly name = "NotFoundError";
}

/**
 * A dependency (the database) cannot be reached. Maps to unavailable, which tells clients a retry
 * may succeed. The message is safe to show; the driver's error stays in `cause` for the logs.
 */
export class UnavailableError extends Error {
  override readonly name = "UnavailableError";
}

/**
 * A position outside what is kept (a cursor older than the events retained). Maps to
 * out_of_range: asking again from the current state works, asking again the same way does not.
 */
export class OutOfRangeError extends Error {
  override readonly name = "OutOfRangeError";
}

/**
 * A limit on what one caller may hold was reached (streams per key, a watcher's buffer). Maps to
 * resource_exhausted. `metadata` goes to the caller as trailers (a cursor to resume from).
 */
export class ResourceExhaustedError extends Error {
  override readonly name = "ResourceExhaustedError";
  readonly metadata: Readonly<Record<string, string>> | undefined;
  constructor(message: string, metadata?: Readonly<Record<string, string>>) {
    super(message);
    this.metadata = metadata;
  }
}

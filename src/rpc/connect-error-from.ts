import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, type ContextValues, type Interceptor } from "@connectrpc/connect";
import { BadRequestSchema } from "../../gen/google/rpc/error_details_pb.ts";
import {
  FailedPreconditionError,
  InvalidArgumentError,
  NotFoundError,
  OutOfRangeError,
  ResourceExhaustedError,
  UnavailableError,
} from "../domain/errors.ts";
import { procedureOf } from "./call-labels.ts";

/**
 * Receives errors that were not expected, so they are logged before callers see "internal error".
 * `values` are the call's context values (its request id), when the error arose in a call.
 */
export type UnexpectedErrorSink = (error: unknown, procedure: string, values?: ContextValues) => void;

/**
 * Converts whatever a handler threw into the ConnectError a caller sees. Domain errors carry safe
 * messages and map to their codes (invalid_argument with a google.rpc.BadRequest detail listing
 * every bad field); ConnectErrors pass through; anything else is unexpected, so its text (which
 * may hold a stack or a driver message) stays in the log and the caller gets a bare `internal`.
 *
 * Every message leaves as well-formed UTF-16 (a lone surrogate becomes U+FFFD): a caller's text
 * can carry lone surrogates through JSON (a Struct key, say), and over gRPC and gRPC-Web the
 * message is percent-encoded into a trailer, where a lone surrogate throws and the call was then
 * reset or never answered.
 */
export function connectErrorFrom(
  reason: unknown,
  procedure: string,
  onUnexpected: UnexpectedErrorSink,
  values?: ContextValues,
): ConnectError {
  if (reason instanceof ConnectError) {
    if (reason.rawMessage.isWellFormed()) return reason;
    const fixed = new ConnectError(
      reason.rawMessage.toWellFormed(),
      reason.code,
      reason.metadata,
      undefined,
      reason.cause,
    );
    fixed.details = reason.details;
    return fixed;
  }
  if (reason instanceof InvalidArgumentError) {
    const detail = create(BadRequestSchema, {
      fieldViolations: reason.violations.map((v) => ({
        field: v.field.toWellFormed(),
        description: v.description.toWellFormed(),
      })),
    });
    return new ConnectError(reason.message.toWellFormed(), Code.InvalidArgument, undefined, [
      { desc: BadRequestSchema, value: detail },
    ]);
  }
  if (reason instanceof NotFoundError) return new ConnectError(reason.message.toWellFormed(), Code.NotFound);
  if (reason instanceof FailedPreconditionError)
    return new ConnectError(reason.message.toWellFormed(), Code.FailedPrecondition);
  if (reason instanceof OutOfRangeError)
    return new ConnectError(reason.message.toWellFormed(), Code.OutOfRange);
  if (reason instanceof ResourceExhaustedError)
    return new ConnectError(reason.message.toWellFormed(), Code.ResourceExhausted, reason.metadata);
  if (reason instanceof UnavailableError) {
    onUnexpected(reason, procedure, values);
    return new ConnectError(reason.message.toWellFormed(), Code.Unavailable);
  }
  onUnexpected(reason, procedure, values);
  return new ConnectError("internal error", Code.Internal);
}

/**
 * Applies `connectErrorFrom` to every call, once, at the boundary: to what a unary call throws,
 * and to what a server stream throws after its first messages (a stream's handler runs while its
 * messages are read, after `next` has returned).
 */
export function createErrorInterceptor(onUnexpected: UnexpectedErrorSink): Interceptor {
  return (next) => async (req) => {
    const mapped = (reason: unknown) =>
      // A client that hung up mid-call (buf curl stopped with Ctrl-C, a closed tab) is no failure
      // of the service: its request stream ends with "Premature close" or a reset, which would
      // otherwise read as internal, with a stack trace at error level.
      clientWentAway(reason, req.signal)
        ? new ConnectError("the client went away", Code.Canceled, undefined, undefined, reason)
        : connectErrorFrom(reason, procedureOf(req.method), onUnexpected, req.contextValues);
    try {
      const res = await next(req);
      if (!res.stream) return res;
      return { ...res, message: mappingErrors(res.message, mapped) };
    } catch (reason) {
      throw mapped(reason);
    }
  };
}

async function* mappingErrors<T>(
  messages: AsyncIterable<T>,
  mapped: (reason: unknown) => ConnectError,
): AsyncGenerator<T> {
  try {
    yield* messages;
  } catch (reason) {
    throw mapped(reason);
  }
}

/** Node's words for a request stream its client closed or reset before it ended. */
const CLIENT_GONE = new Set(["ERR_STREAM_PREMATURE_CLOSE", "ECONNRESET", "ERR_HTTP2_STREAM_ERROR"]);

/**
 * Whether `reason` (not one of the service's own errors) came of the client going away: Node's
 * stream error says so, or the call's signal fired for it (the lean path aborts with canceled; a
 * deadline fires it with deadline_exceeded, which stays what it is).
 */
function clientWentAway(reason: unknown, signal: AbortSignal): boolean {
  if (reason instanceof ConnectError) return false;
  const code = (reason as { code?: unknown } | null)?.code;
  if (typeof code === "string" && CLIENT_GONE.has(code)) return true;
  return signal.aborted && signal.reason instanceof ConnectError && signal.reason.code === Code.Canceled;
}

import type { DescMethod } from "@bufbuild/protobuf";
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { codeToString } from "@connectrpc/connect/protocol-connect";
import { UnavailableError } from "../domain/errors.ts";
import type { Logger } from "../logger.ts";
import { createProcedureNames, protocolOf } from "./call-labels.ts";
import { type CallLineWriter, createCallLineWriter } from "./call-line.ts";
import type { UnexpectedErrorSink } from "./connect-error-from.ts";
import { observeCall } from "./observe-call.ts";
import { keyIdKey } from "./principal.ts";
import { createRequestIds, REQUEST_ID_HEADER, requestIdKey } from "./request-id.ts";

/**
 * One JSON line per call: procedure, protocol, code ("ok" or the Connect code name), duration_ms
 * and request_id (and key_id, the id of the caller's API key). The request id is the caller's `x-request-id` when sane, else a fresh one; it is
 * put in the call's context values (so other log lines about the call carry it) and echoed to the
 * caller: in the response headers, or with an error in its metadata (headers for Connect unary,
 * trailers for gRPC and gRPC-Web, where errors travel).
 *
 * Levels: a failure the service is to blame for (internal, unknown, data_loss) is an error, an
 * unavailable dependency a warning; everything else, client mistakes included, is info. Nothing
 * from the request but these fields is logged, so neither credentials nor payloads can leak here.
 */
export function createLoggingInterceptor(options: { logger: Logger }): Interceptor {
  // A call line holds only the fixed fields below, none of them secret, so it skips the
  // redaction pass the root logger makes over every line (as costly as the rest of the line,
  // and paid on every call).
  const logger = options.logger.child({}, { redact: [] });
  const procedureOf = createProcedureNames();
  const requestIdFrom = createRequestIds();
  // One line writer per procedure and protocol (a fixed set), over a child logger whose two
  // fields pino serializes once, when the child is made, instead of on every call.
  const lineWriters = new WeakMap<DescMethod, Map<string, CallLineWriter>>();
  const lineWriterOf = (method: DescMethod, protocol: string): CallLineWriter => {
    let byProtocol = lineWriters.get(method);
    if (byProtocol === undefined) {
      byProtocol = new Map();
      lineWriters.set(method, byProtocol);
    }
    let line = byProtocol.get(protocol);
    if (line === undefined) {
      line = createCallLineWriter(logger.child({ procedure: procedureOf(method), protocol }));
      byProtocol.set(protocol, line);
    }
    return line;
  };
  return (next) => async (req) => {
    const started = performance.now();
    const requestId = requestIdFrom(req.header.get(REQUEST_ID_HEADER));
    req.contextValues.set(requestIdKey, requestId);
    try {
      const res = await observeCall(next, req, (code) => {
        const level = levelOf(code);
        if (!logger.isLevelEnabled(level)) return;
        lineWriterOf(req.method, protocolOf(req))(
          level,
          code === undefined ? "ok" : codeToString(code),
          Math.round((performance.now() - started) * 1000) / 1000,
          requestId,
          // The API key's id, never the key; absent for calls without one.
          req.contextValues.get(keyIdKey) || undefined,
        );
      });
      res.header.set(REQUEST_ID_HEADER, requestId);
      return res;
    } catch (error) {
      // The error interceptor further in has made every error a ConnectError, whose metadata
      // reaches the caller.
      if (error instanceof ConnectError) error.metadata.set(REQUEST_ID_HEADER, requestId);
      throw error;
    }
  };
}

function levelOf(code: Code | undefined): "info" | "warn" | "error" {
  switch (code) {
    case Code.Internal:
    case Code.Unknown:
    case Code.DataLoss:
      return "error";
    case Code.Unavailable:
      return "warn";
    default:
      return "info";
  }
}

/**
 * The error interceptor's sink: logs what the caller was not told (the cause, the stack) with the
 * call's request id. An unavailable dependency is expected in operation and logged as a warning.
 */
export function createUnexpectedErrorLogger(logger: Logger): UnexpectedErrorSink {
  return (error, procedure, values) => {
    const fields = { err: error, procedure, request_id: values?.get(requestIdKey) };
    if (error instanceof UnavailableError) logger.warn(fields, "dependency unavailable");
    else logger.error(fields, "call failed");
  };
}

import { pino } from "pino";
import { destinationOf, type Logger } from "../logger.ts";

export type CallLineLevel = "info" | "warn" | "error";

/**
 * Writes one call line: what `logger[level]({ code, duration_ms, request_id, key_id }, "rpc")`
 * writes, byte for byte.
 */
export type CallLineWriter = (
  level: CallLineLevel,
  code: string,
  durationMs: number,
  requestId: string,
  keyId: string | undefined,
) => void;

/**
 * The call line of `logger` (a child that carries the procedure and protocol), written without
 * pino's general path. pino's level method takes rest arguments, formats the message, walks the
 * fields with `for...in`, looks up a serializer and a stringifier for each and escapes every key:
 * for a line whose keys and types never change that was most of the line's cost, and the line
 * about a tenth of a unary call's (measured side by side). Here the line is one template over
 * parts taken from the logger itself (level prefix, time function, bindings, message key, line
 * end), so it follows the logger's configuration. A logger configured beyond what this reproduces
 * (a mixin, a log formatter, a write hook, a message prefix, a nested key, serializers or
 * redaction on these fields, a destination that wants metadata) gets pino's own path.
 * `test/call-line.test.ts` compares both paths' bytes.
 */
export function createCallLineWriter(logger: Logger): CallLineWriter {
  const general: CallLineWriter = (level, code, durationMs, requestId, keyId) => {
    logger[level]({ code, duration_ms: durationMs, request_id: requestId, key_id: keyId }, "rpc");
  };
  const own = logger as unknown as Record<symbol, unknown>;
  const symbols = pino.symbols as unknown as Record<string, symbol>;
  const at = (name: string): unknown => {
    const symbol = symbols[name];
    return symbol === undefined ? undefined : own[symbol];
  };
  const stream = destinationOf(logger) as
    | ({ write(line: string): void } & Record<symbol, unknown>)
    | undefined;
  const levelPrefixes = at("lsCacheSym") as Record<number, string> | undefined;
  const time = at("timeSym");
  const bindings = at("chindingsSym");
  const end = at("endSym");
  const messageKey = at("messageKeySym");
  const formatters = at("formattersSym") as { log?: unknown } | undefined;
  const hooks = at("hooksSym") as { streamWrite?: unknown } | undefined;
  const serializers = (at("serializersSym") ?? {}) as Record<string, unknown>;
  const stringifiers = (at("stringifiersSym") ?? {}) as Record<string | symbol, unknown>;
  const wildcard = symbols.wildcardFirstSym;
  const fields = ["code", "duration_ms", "request_id", "key_id", "msg"];
  const reproducible =
    stream !== undefined &&
    typeof stream.write === "function" &&
    levelPrefixes !== undefined &&
    typeof time === "function" &&
    typeof bindings === "string" &&
    typeof end === "string" &&
    messageKey === "msg" &&
    formatters?.log === undefined &&
    hooks?.streamWrite === undefined &&
    !at("mixinSym") &&
    !at("msgPrefixSym") &&
    !at("nestedKeySym") &&
    symbols.needsMetadataGsym !== undefined &&
    stream[symbols.needsMetadataGsym] !== true &&
    fields.every((key) => serializers[key] === undefined && stringifiers[key] === undefined) &&
    (wildcard === undefined || stringifiers[wildcard] === undefined);
  if (!reproducible) return general;
  const values = logger.levels.values;
  const prefix = {
    info: levelPrefixes[values.info as number],
    warn: levelPrefixes[values.warn as number],
    error: levelPrefixes[values.error as number],
  };
  if (prefix.info === undefined || prefix.warn === undefined || prefix.error === undefined) return general;
  const now = time as () => string;
  const tail = `,"msg":"rpc"${end}`;
  return (level, code, durationMs, requestId, keyId) => {
    stream.write(
      `${prefix[level]}${now()}${bindings},"code":${text(code)},"duration_ms":${Number.isFinite(durationMs) ? durationMs : null},"request_id":${text(requestId)}${
        keyId === undefined ? "" : `,"key_id":${text(keyId)}`
      }${tail}`,
    );
  };
}

/** Text that needs no escaping in JSON, as codes, request ids and key ids are. */
const PLAIN = /^[\w.\-:]*$/;

/** A JSON string, as pino writes one: quoted as is when nothing in it needs escaping. */
function text(value: string): string {
  return PLAIN.test(value) ? `"${value}"` : JSON.stringify(value);
}

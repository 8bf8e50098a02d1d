import { parseJsonExactIntegers, stringifyJsonBigInts } from "../chain/json-bigints.ts";
import {
  INTERNAL_ERROR,
  INVALID_PARAMS,
  INVALID_REQUEST,
  JsonRpcError,
  METHOD_NOT_FOUND,
  PARSE_ERROR,
} from "./json-rpc-error.ts";
import { rustDebug } from "./rust-debug.ts";

/** One JSON-RPC method: its positional params in, its result out (or a JsonRpcError thrown). */
export type RpcMethod = (params: readonly unknown[]) => unknown | Promise<unknown>;

export interface JsonRpcHandlerOptions {
  readonly methods: Readonly<Record<string, RpcMethod>>;
  /** How many positional params each method takes, at least and at most (absent: any). */
  readonly paramCounts?: Readonly<Record<string, readonly [min: number, max: number]>>;
  /** Requests one batch may hold; a larger batch is refused whole. */
  readonly maxBatch: number;
  /** Told about every request: its method (or why it had none) and its outcome. */
  readonly onRequest?: (method: string, outcome: "ok" | "error", code?: number) => void;
  /** Told about errors no method meant to raise (they answer -32603 "Internal error"). */
  readonly onUnexpected?: (error: unknown, method: string) => void;
}

export interface JsonRpcHandler {
  /**
   * Answers a request body (one request or a batch) with its response body, or "" when none is
   * due. Never rejects: what fails unexpectedly answers -32603 and is told to `onUnexpected`.
   */
  handle(body: string): Promise<string>;
  /**
   * Answers one request given as a value (as JSON.parse would give it, with integers beyond 2^53
   * as bigints) with the response as a value, for callers in this process: the same answer as
   * `handle`, without writing and reading the text.
   */
  handleValue(request: unknown): Promise<object | undefined>;
}

/**
 * JSON-RPC 2.0 as Solana's validators serve it (jsonrpc-core): single requests and batches,
 * notifications (no `id`: no answer), params by position, and the standard errors (-32700 parse
 * error, -32600 invalid request, -32601 method not found, -32602 invalid params, -32603 internal
 * error). u64 values are read and written as exact integers. The same handler serves the HTTP port
 * and the in-process transport, so both answer byte for byte alike.
 */
export function createJsonRpcHandler(options: JsonRpcHandlerOptions): JsonRpcHandler {
  const { methods, maxBatch } = options;
  const paramCounts = options.paramCounts ?? {};
  const onRequest = options.onRequest ?? (() => {});
  const onUnexpected = options.onUnexpected ?? (() => {});

  const failure = (id: unknown, error: JsonRpcError) => ({
    jsonrpc: "2.0",
    error: {
      code: error.code,
      message: error.message,
      ...(error.data === undefined ? {} : { data: error.data }),
    },
    id,
  });

  /**
   * The params a method's positional list must match, as jsonrpc-core's derive checks them before
   * any method runs: trailing nulls count as omitted.
   */
  const checkParams = (method: string, params: unknown): JsonRpcError | undefined => {
    const [min, max] = Object.hasOwn(paramCounts, method)
      ? (paramCounts[method] as [number, number])
      : [0, Infinity];
    if (max === 0) {
      const empty = params === undefined || params === null || (Array.isArray(params) && params.length === 0);
      return empty
        ? undefined
        : new JsonRpcError(
            INVALID_PARAMS,
            "Invalid parameters: No parameters were expected",
            rustDebug(params, DEBUG_BOUNDS),
          );
    }
    if (params !== undefined && params !== null && !Array.isArray(params)) {
      return new JsonRpcError(INVALID_PARAMS, "`params` should be an array");
    }
    const list = (params as unknown[] | undefined | null) ?? [];
    let given = list.length;
    while (given > 0 && list[given - 1] === null) given--;
    if (given < min)
      return new JsonRpcError(INVALID_PARAMS, `\`params\` should have at least ${min} argument(s)`);
    if (list.length > max) {
      return new JsonRpcError(
        INVALID_PARAMS,
        `Invalid parameters: Expected from ${min} to ${max} parameters.`,
        `Got: ${list.length}`,
      );
    }
    return undefined;
  };

  /** One request's response object, or undefined for a notification. */
  const one = async (request: unknown): Promise<object | undefined> => {
    if (typeof request !== "object" || request === null || Array.isArray(request)) {
      onRequest("invalid", "error", INVALID_REQUEST);
      return failure(null, new JsonRpcError(INVALID_REQUEST, "Invalid request"));
    }
    const fields = request as Record<string, unknown>;
    const { jsonrpc, method, params, id } = fields;
    const validId =
      id === undefined ||
      id === null ||
      typeof id === "string" ||
      typeof id === "number" ||
      typeof id === "bigint";
    if (!Object.hasOwn(fields, "jsonrpc")) {
      // jsonrpc-core answers a JSON-RPC 1.0 request so, without the "jsonrpc" member itself.
      onRequest("invalid", "error", INVALID_REQUEST);
      return {
        error: { code: INVALID_REQUEST, message: "Unsupported JSON-RPC protocol version" },
        id: validId ? (id ?? null) : null,
      };
    }
    const unknownMember = Object.keys(fields).some((key) => !ENVELOPE_MEMBERS.has(key));
    if (jsonrpc !== "2.0" || typeof method !== "string" || !validId || unknownMember) {
      onRequest("invalid", "error", INVALID_REQUEST);
      return failure(validId ? (id ?? null) : null, new JsonRpcError(INVALID_REQUEST, "Invalid request"));
    }
    const implementation = Object.hasOwn(methods, method) ? methods[method] : undefined;
    let response: object;
    const refused = implementation === undefined ? undefined : checkParams(method, params);
    if (implementation === undefined) {
      onRequest("unknown", "error", METHOD_NOT_FOUND);
      response = failure(id ?? null, new JsonRpcError(METHOD_NOT_FOUND, "Method not found"));
    } else if (refused !== undefined) {
      onRequest(method, "error", refused.code);
      response = failure(id ?? null, refused);
    } else {
      try {
        const result = await implementation((params as unknown[] | undefined | null) ?? []);
        onRequest(method, "ok");
        response = { jsonrpc: "2.0", result, id };
      } catch (error) {
        const known = error instanceof JsonRpcError;
        if (!known) onUnexpected(error, method);
        const rpcError = known ? error : new JsonRpcError(INTERNAL_ERROR, "Internal error");
        onRequest(method, "error", rpcError.code);
        response = failure(id ?? null, rpcError);
      }
    }
    return id === undefined ? undefined : response;
  };

  const internalError = (request: unknown) =>
    failure(idOf(request) ?? null, new JsonRpcError(INTERNAL_ERROR, "Internal error"));
  const labelOf = (request: unknown) => {
    const method = (request as { method?: unknown } | null)?.method;
    return typeof method === "string" && Object.hasOwn(methods, method) ? method : "unknown";
  };

  /**
   * One request's answer, whatever happens on the way: an error no code meant to raise (in
   * checking the request, in the method, in writing the answer) is reported once and answers
   * -32603, so that nothing a caller sends can make `handle` reject.
   */
  const settled = async (request: unknown): Promise<object | undefined> => {
    try {
      return await one(request);
    } catch (error) {
      onUnexpected(error, labelOf(request));
      return idOf(request) === undefined ? undefined : internalError(request);
    }
  };
  /** As `settled`, as text ("" when no answer is due). */
  const settledText = async (request: unknown): Promise<string> => {
    const response = await settled(request);
    if (response === undefined) return "";
    try {
      return stringifyJsonBigInts(response);
    } catch (error) {
      onUnexpected(error, labelOf(request));
      return stringifyJsonBigInts(internalError(request));
    }
  };

  const handleBody = async (body: string): Promise<string> => {
    let parsed: unknown;
    try {
      parsed = parseJsonExactIntegers(body);
    } catch {
      onRequest("invalid", "error", PARSE_ERROR);
      return stringifyJsonBigInts(failure(null, new JsonRpcError(PARSE_ERROR, "Parse error")));
    }
    if (!Array.isArray(parsed)) return settledText(parsed);
    if (parsed.length === 0 || parsed.length > maxBatch) {
      onRequest("invalid", "error", INVALID_REQUEST);
      const message =
        parsed.length === 0
          ? "Invalid request"
          : `Invalid request: a batch may hold at most ${maxBatch} requests`;
      return stringifyJsonBigInts(failure(null, new JsonRpcError(INVALID_REQUEST, message)));
    }
    // One after another: the chain is one machine, and a batch's order is its order.
    const texts: string[] = [];
    for (const request of parsed) {
      const text = await settledText(request);
      if (text !== "") texts.push(text);
    }
    return texts.length === 0 ? "" : `[${texts.join(",")}]`;
  };

  return {
    handleValue: settled,
    async handle(body) {
      try {
        return await handleBody(body);
      } catch (error) {
        // Past every per-request boundary: the body as a whole could not be answered.
        onUnexpected(error, "unknown");
        return stringifyJsonBigInts(internalError(null));
      }
    },
  };
}

/**
 * The id a request's answer carries: undefined for a notification (no answer), null when the
 * request has none that is valid.
 */
function idOf(request: unknown): unknown {
  if (typeof request !== "object" || request === null || Array.isArray(request)) return null;
  if (!Object.hasOwn(request, "id")) return undefined;
  const { id } = request as { id: unknown };
  const valid = id === null || typeof id === "string" || typeof id === "number" || typeof id === "bigint";
  return valid ? id : null;
}

/** How much of refused params an error's `data` shows: enough to see the mistake, never the whole. */
const DEBUG_BOUNDS = { maxDepth: 16, maxLength: 512 };

/** The members a JSON-RPC 2.0 call may have (jsonrpc-core refuses any other). */
const ENVELOPE_MEMBERS = new Set(["jsonrpc", "method", "params", "id"]);

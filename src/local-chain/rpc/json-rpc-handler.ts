import { setImmediate as yieldToLoop } from "node:timers/promises";
import { parseJsonExactIntegers, stringifyJsonBigInts } from "../../chain/json-bigints.ts";
import {
  type AnswerBudget,
  answerTooLarge,
  createAnswerBudget,
  requestTooLong,
  type TimeBudget,
} from "./answer-budget.ts";
import {
  INTERNAL_ERROR,
  INVALID_REQUEST,
  JsonRpcError,
  METHOD_NOT_FOUND,
  PARSE_ERROR,
} from "./json-rpc-error.ts";
import { checkParamCount } from "./param-count-check.ts";
import type { PublicTurns } from "./public-turns.ts";

/** Who sent a request: what a method may limit per client (requestAirdrop). */
export interface RpcCaller {
  /** The client's address on the port; undefined for a caller in this process (the service). */
  readonly address: string | undefined;
  /** The port the request came in on (getClusterNodes names it); undefined in this process. */
  readonly port?: number | undefined;
}

/** A caller in this process. */
export const IN_PROCESS: RpcCaller = Object.freeze({ address: undefined });

/**
 * One JSON-RPC method: its positional params in, its result out (or a JsonRpcError thrown).
 * Methods whose answers can be large charge their bulk to `answer` before building it.
 */
export type RpcMethod = (
  params: readonly unknown[],
  answer: AnswerBudget,
  caller: RpcCaller,
) => unknown | Promise<unknown>;

export interface JsonRpcHandlerOptions {
  readonly methods: Readonly<Record<string, RpcMethod>>;
  /** How many positional params each method takes, at least and at most (absent: any). */
  readonly paramCounts?: Readonly<Record<string, readonly [min: number, max: number]>>;
  /** Requests one batch may hold; a larger batch is refused whole. */
  readonly maxBatch: number;
  /**
   * Bytes one answer may hold, a single request's or a whole batch's: a request whose answer would
   * pass it answers -32012 instead (see answer-budget.ts), and in a batch, the requests after it
   * get what is left.
   */
  readonly maxAnswerBytes: number;
  /**
   * Time one request, or a whole batch, may run (LOCAL_SOLANA_MAX_REQUEST_MS): methods stop as
   * they charge their answer past it, and a batch's requests after it answer -32012 unrun.
   * Undefined: no bound.
   */
  readonly maxRequestMs?: number;
  /**
   * Where requests from the port (a caller with an address) wait for their turn, each request of a
   * batch on its own, so that the service's own requests (no address) are served between them
   * (see public-turns.ts). Undefined: every request runs as it comes.
   */
  readonly turns?: PublicTurns;
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
  handle(body: string, caller?: RpcCaller): Promise<string>;
  /**
   * Answers one request given as a value (as JSON.parse would give it, with integers beyond 2^53
   * as bigints) with the response as a value, for callers in this process: the same answer as
   * `handle`, without writing and reading the text (so only what methods charge is bounded).
   */
  handleValue(request: unknown, caller?: RpcCaller): Promise<object | undefined>;
}

/** What one request came to. */
interface Outcome {
  /** The method (a known one), "unknown" or "invalid": a bounded metric label. */
  readonly label: string;
  /** The id its answer carries. */
  readonly id: unknown;
  /** Its answer; undefined for a notification. */
  readonly response: object | undefined;
  /** The error code it answered; undefined for a result. */
  readonly code: number | undefined;
}

/**
 * JSON-RPC 2.0 as Solana's validators serve it (jsonrpc-core): single requests and batches,
 * notifications (no `id`: no answer), params by position, and the standard errors (-32700 parse
 * error, -32600 invalid request, -32601 method not found, -32602 invalid params, -32603 internal
 * error). u64 values are read and written as exact integers. The same handler serves the HTTP port
 * and the in-process transport, so both answer byte for byte alike.
 */
export function createJsonRpcHandler(options: JsonRpcHandlerOptions): JsonRpcHandler {
  const { methods, maxBatch, maxAnswerBytes, maxRequestMs } = options;
  const timeFrom = (started: number): TimeBudget | undefined =>
    maxRequestMs === undefined ? undefined : { deadline: started + maxRequestMs, maxRequestMs };
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
  const refusal = (label: string, id: unknown, error: JsonRpcError): Outcome => ({
    label,
    id,
    response: failure(id, error),
    code: error.code,
  });
  const count = (outcome: Outcome) =>
    onRequest(outcome.label, outcome.code === undefined ? "ok" : "error", outcome.code);

  /** One request, run (it counts nothing: its outcome is counted once its answer is final). */
  const one = async (request: unknown, budget: AnswerBudget, caller: RpcCaller): Promise<Outcome> => {
    if (typeof request !== "object" || request === null || Array.isArray(request)) {
      return refusal("invalid", null, new JsonRpcError(INVALID_REQUEST, "Invalid request"));
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
      const answerId = validId ? (id ?? null) : null;
      return {
        label: "invalid",
        id: answerId,
        response: {
          error: { code: INVALID_REQUEST, message: "Unsupported JSON-RPC protocol version" },
          id: answerId,
        },
        code: INVALID_REQUEST,
      };
    }
    const unknownMember = Object.keys(fields).some((key) => !ENVELOPE_MEMBERS.has(key));
    if (jsonrpc !== "2.0" || typeof method !== "string" || !validId || unknownMember) {
      const answerId = validId ? (id ?? null) : null;
      return refusal("invalid", answerId, new JsonRpcError(INVALID_REQUEST, "Invalid request"));
    }
    const implementation = Object.hasOwn(methods, method) ? methods[method] : undefined;
    let outcome: Outcome;
    const refused =
      implementation === undefined
        ? undefined
        : checkParamCount(params, Object.hasOwn(paramCounts, method) ? paramCounts[method] : undefined);
    if (implementation === undefined) {
      outcome = refusal("unknown", id ?? null, new JsonRpcError(METHOD_NOT_FOUND, "Method not found"));
    } else if (refused !== undefined) {
      outcome = refusal(method, id ?? null, refused);
    } else {
      try {
        const result = await implementation((params as unknown[] | undefined | null) ?? [], budget, caller);
        outcome = { label: method, id, response: { jsonrpc: "2.0", result, id }, code: undefined };
      } catch (error) {
        const known = error instanceof JsonRpcError;
        if (!known) onUnexpected(error, method);
        outcome = refusal(method, id ?? null, known ? error : internalError());
      }
    }
    return id === undefined ? { ...outcome, response: undefined } : outcome;
  };

  /**
   * One request's outcome, whatever happens on the way: an error no code meant to raise (in
   * checking the request or in the method) is reported once and answers -32603, so that nothing
   * a caller sends can make the handler reject.
   */
  const settled = async (request: unknown, budget: AnswerBudget, caller: RpcCaller): Promise<Outcome> => {
    try {
      return await one(request, budget, caller);
    } catch (error) {
      const label = labelOf(request);
      onUnexpected(error, label);
      const outcome = refusal(label, idOf(request) ?? null, internalError());
      return idOf(request) === undefined ? { ...outcome, response: undefined } : outcome;
    }
  };

  /**
   * One request's answer as text ("" when none is due), within `room` bytes: past them the
   * answer is the too-large error. Its outcome is counted here, once.
   */
  const written = async (
    request: unknown,
    room: number,
    caller: RpcCaller,
    time: TimeBudget | undefined,
  ): Promise<string> => {
    let outcome: Outcome;
    if (time !== undefined && performance.now() > time.deadline) {
      // The batch's time is spent: the rest is refused unrun, with what to narrow.
      const id = idOf(request);
      const refused = refusal(labelOf(request), id ?? null, requestTooLong(time.maxRequestMs));
      outcome = id === undefined ? { ...refused, response: undefined } : refused;
    } else {
      outcome = await settled(request, createAnswerBudget({ bytes: room, maxAnswerBytes, time }), caller);
    }
    let text = "";
    if (outcome.response !== undefined) {
      try {
        text = stringifyJsonBigInts(outcome.response);
      } catch (error) {
        onUnexpected(error, outcome.label);
        outcome = refusal(outcome.label, outcome.id, internalError());
        text = stringifyJsonBigInts(outcome.response);
      }
      if (Buffer.byteLength(text) > room) {
        outcome = refusal(outcome.label, outcome.id, answerTooLarge(maxAnswerBytes));
        text = stringifyJsonBigInts(outcome.response);
      }
    }
    count(outcome);
    return text;
  };

  const handleBody = async (body: string, caller: RpcCaller): Promise<string> => {
    let parsed: unknown;
    try {
      parsed = parseJsonExactIntegers(body);
    } catch {
      onRequest("invalid", "error", PARSE_ERROR);
      return stringifyJsonBigInts(failure(null, new JsonRpcError(PARSE_ERROR, "Parse error")));
    }
    // The port's requests wait for their turn (public-turns.ts); the service's own run at once.
    const turns = caller.address === undefined ? undefined : options.turns;
    // A request's time counts from its first turn: the wait for it is not the request's doing.
    let time: TimeBudget | undefined;
    let timing = false;
    const step = (request: unknown, room: number): Promise<string> => {
      const run = () => {
        if (!timing) {
          timing = true;
          time = timeFrom(performance.now());
        }
        return written(request, room, caller, time);
      };
      return turns === undefined ? run() : turns.run(run);
    };
    if (!Array.isArray(parsed)) return step(parsed, maxAnswerBytes);
    if (parsed.length === 0 || parsed.length > maxBatch) {
      onRequest("invalid", "error", INVALID_REQUEST);
      const message =
        parsed.length === 0
          ? "Invalid request"
          : `Invalid request: a batch may hold at most ${maxBatch} requests`;
      return stringifyJsonBigInts(failure(null, new JsonRpcError(INVALID_REQUEST, message)));
    }
    // One after another: the chain is one machine, and a batch's order is its order. Each answer
    // gets what the ones before it left (less the brackets and commas); an answer refused for its
    // size leaves the room to the requests after it.
    let room = maxAnswerBytes - 2;
    // Kept as bytes until the batch is done: outside V8's heap, where the answers of batches in
    // flight (up to maxAnswerBytes each) would otherwise be copied by every young collection.
    const parts: Buffer[] = [];
    let bytes = 0;
    for (const [index, request] of parsed.entries()) {
      // Between requests the chain's thread serves its other clients (and PubSub) a turn: the
      // port's requests by taking turns with every other request of the port, each one.
      if (index > 0 && turns === undefined) await yieldToLoop();
      const text = await step(request, room);
      if (text === "") continue;
      const part = Buffer.from(text, "utf8");
      parts.push(part);
      bytes += part.length;
      room -= part.length + 1;
    }
    if (parts.length === 0) return "";
    // [a,b,c]: the parts, their commas and the brackets.
    const out = Buffer.allocUnsafe(bytes + parts.length + 1);
    out[0] = 0x5b;
    let at = 1;
    for (const [index, part] of parts.entries()) {
      if (index > 0) out[at++] = 0x2c;
      at += part.copy(out, at);
    }
    out[at] = 0x5d;
    return out.toString("utf8");
  };

  return {
    async handleValue(request, caller = IN_PROCESS) {
      const outcome = await settled(
        request,
        createAnswerBudget({ bytes: maxAnswerBytes, maxAnswerBytes, time: timeFrom(performance.now()) }),
        caller,
      );
      count(outcome);
      return outcome.response;
    },
    async handle(body, caller = IN_PROCESS) {
      try {
        return await handleBody(body, caller);
      } catch (error) {
        // Past every per-request boundary: the body as a whole could not be answered.
        onUnexpected(error, "unknown");
        return stringifyJsonBigInts(failure(null, internalError()));
      }
    },
  };

  function labelOf(request: unknown): string {
    const method = (request as { method?: unknown } | null)?.method;
    return typeof method === "string" && Object.hasOwn(methods, method) ? method : "unknown";
  }
}

function internalError(): JsonRpcError {
  return new JsonRpcError(INTERNAL_ERROR, "Internal error");
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

/** The members a JSON-RPC 2.0 call may have (jsonrpc-core refuses any other). */
const ENVELOPE_MEMBERS = new Set(["jsonrpc", "method", "params", "id"]);

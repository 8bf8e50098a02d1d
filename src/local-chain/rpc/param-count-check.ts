import { INVALID_PARAMS, JsonRpcError } from "./json-rpc-error.ts";
import { rustDebug } from "./rust-debug.ts";

/** How much of refused params an error's `data` shows: enough to see the mistake, never the whole. */
const DEBUG_BOUNDS = { maxDepth: 16, maxLength: 512 };

/**
 * Whether a method's positional params match its count, as jsonrpc-core's derive checks them
 * before any method runs (trailing nulls count as omitted): the refusal, with jsonrpc-core's
 * words, or undefined. `count` is [min, max]; absent, any list is taken.
 */
export function checkParamCount(
  params: unknown,
  count: readonly [min: number, max: number] | undefined,
): JsonRpcError | undefined {
  const [min, max] = count ?? [0, Infinity];
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
}

import type { RpcTransport } from "@solana/kit";
import type { JsonRpcHandler } from "../rpc/json-rpc-handler.ts";
import { type KitShape, kitRead } from "./kit-shape.ts";

/**
 * A @solana/kit RPC transport that hands each request to the local chain's JSON-RPC handler in
 * this process, without a socket and without JSON text: the request and the answer cross as
 * values, converted as the text would have converted them. A request's u64 values arrive as the
 * server reads them from text (numbers, bigints beyond 2^53), and every integer of the answer
 * leaves as a bigint, as kit's HTTP transport reads it (its `parseJsonWithBigInts`); kit then turns
 * the fields it types as numbers back into numbers. So the chain adapter runs the same code, and
 * sees the same values, against the embedded chain as against a cluster; writing and reading the
 * text cost more than the rest of a cached GetTokenTransactions call.
 */
export function createLocalTransport(handler: JsonRpcHandler): RpcTransport {
  return (async ({ payload, signal }) => {
    signal?.throwIfAborted();
    return answerAsKit(handler, payload);
  }) as RpcTransport;
}

/**
 * One request as kit sends it, answered as kit reads it: what the transport above does, and what
 * the chain's worker thread does with each request the service posts to it (local-chain-worker.ts),
 * so that the conversions run on the chain's thread, not the service's.
 */
export async function answerAsKit(handler: JsonRpcHandler, payload: unknown): Promise<unknown> {
  const response = await handler.handleValue(asServerReadsIt(payload));
  return kitRead(response ?? null);
}

/**
 * One request of the service's, answered for the service's thread (local-chain-worker.ts): where
 * `shapeOf` knows the method and the answer is a result, the result as kit's RPC will have
 * shaped it (`shaped`: the service's kit RPC takes it as it is, see chain/chain-rpc.ts);
 * otherwise (an error, another method) the answer as answerAsKit gives it, for kit to read.
 */
export async function answerShaped(
  handler: JsonRpcHandler,
  payload: unknown,
  shapeOf: (method: string) => KitShape | undefined,
): Promise<{ readonly response: unknown; readonly shaped: boolean }> {
  const response = (await handler.handleValue(asServerReadsIt(payload))) as
    | { result?: unknown; error?: unknown; id?: unknown }
    | undefined;
  const method = (payload as { method?: unknown } | null)?.method;
  const shape = typeof method === "string" ? shapeOf(method) : undefined;
  if (shape !== undefined && response !== undefined && response !== null && "result" in response) {
    return { response: { jsonrpc: "2.0", id: response.id, result: shape(response.result) }, shaped: true };
  }
  return { response: kitRead(response ?? null), shaped: false };
}

/** A value as JSON text would carry it to the server: safe integers as numbers. */
function asServerReadsIt(value: unknown): unknown {
  if (typeof value === "bigint") {
    return value >= BigInt(Number.MIN_SAFE_INTEGER) && value <= BigInt(Number.MAX_SAFE_INTEGER)
      ? Number(value)
      : value;
  }
  if (Array.isArray(value)) return value.map(asServerReadsIt);
  if (value !== null && typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const [key, inner] of Object.entries(value))
      if (inner !== undefined) out[key] = asServerReadsIt(inner);
    return out;
  }
  return value;
}

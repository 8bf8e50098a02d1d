import type { RpcTransport } from "@solana/kit";
import { parseJsonBigInts, stringifyJsonBigInts } from "../chain/json-bigints.ts";
import type { JsonRpcHandler } from "./json-rpc-handler.ts";

/**
 * A @solana/kit RPC transport that hands each request to the local chain's JSON-RPC handler in
 * this process: the same text in and out as over HTTP (u64 values as bare integers, read back as
 * bigints as kit's HTTP transport reads them), without a socket. So the chain adapter runs the same
 * code against the embedded chain as against a cluster.
 */
export function createLocalTransport(handler: JsonRpcHandler): RpcTransport {
  return (async ({ payload, signal }) => {
    signal?.throwIfAborted();
    return parseJsonBigInts(await handler.handle(stringifyJsonBigInts(payload)));
  }) as RpcTransport;
}

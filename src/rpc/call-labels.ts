import type { DescMethod } from "@bufbuild/protobuf";
import { Code, ConnectError, type ContextValues, createContextKey } from "@connectrpc/connect";

/**
 * Labels that describe a call in logs and metrics. Each is one of a small fixed set (the served
 * methods, six protocol names, the status codes), so metric cardinality stays bounded whatever
 * callers send, and computing them costs a map lookup rather than string building per call.
 */

/** Request content types, as the adapter accepts them, by protocol and message encoding. */
const PROTOCOLS: ReadonlyMap<string, string> = new Map([
  ["application/json", "connect+json"],
  ["application/proto", "connect+proto"],
  ["application/connect+json", "connect+json"],
  ["application/connect+proto", "connect+proto"],
  ["application/grpc", "grpc+proto"],
  ["application/grpc+proto", "grpc+proto"],
  ["application/grpc+json", "grpc+json"],
  ["application/grpc-web", "grpc-web+proto"],
  ["application/grpc-web+proto", "grpc-web+proto"],
  ["application/grpc-web+json", "grpc-web+json"],
]);

/**
 * Set on calls that arrived on a REST path (google.api.http) and were handed to the Connect
 * handler as Connect JSON, so logs and metrics tell them apart as "rest+json".
 */
export const restCallKey = createContextKey(false, { description: "call arrived on a REST path" });

/**
 * "connect+json", "grpc+proto", "grpc-web+proto", "rest+json", ...: the protocol and encoding of a
 * call, from its content type. Connect GET requests carry no body and say their encoding in the query.
 */
export function protocolOf(req: {
  requestMethod: string;
  header: Headers;
  url: string;
  contextValues: ContextValues;
}): string {
  if (req.contextValues.get(restCallKey)) return "rest+json";
  if (req.requestMethod === "GET")
    return req.url.includes("encoding=proto") ? "connect+proto" : "connect+json";
  const type = req.header.get("content-type") ?? "";
  return PROTOCOLS.get(type) ?? PROTOCOLS.get(type.split(";", 1)[0]?.trim().toLowerCase() ?? "") ?? "unknown";
}

/** "/token.v1.TokenService/GetTokenPrices": the method's path, as Connect names procedures. */
export function procedureOf(method: DescMethod): string {
  return `/${method.parent.typeName}/${method.name}`;
}

/** `procedureOf` memoised per method, for interceptors that label every call. */
export function createProcedureNames(): (method: DescMethod) => string {
  const names = new WeakMap<DescMethod, string>();
  return (method) => {
    let name = names.get(method);
    if (name === undefined) {
      name = procedureOf(method);
      names.set(method, name);
    }
    return name;
  };
}

/** The status code a caller sees for `error`: its own for a ConnectError, else internal. */
export function codeOf(error: unknown): Code {
  return error instanceof ConnectError ? error.code : Code.Internal;
}

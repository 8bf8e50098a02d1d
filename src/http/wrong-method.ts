import { quote } from "../domain/errors.ts";
import type { RequestHandler } from "./dual-protocol-server.ts";

/**
 * Answers a call on a Connect procedure path with a method it does not take (a GET of a
 * procedure that takes POST only, a DELETE, a PUT) with 405, `Allow` and a Connect error body
 * naming the method to use, instead of connect-node's empty 405, for callers that are not a
 * protocol's clients. Preflights (OPTIONS) are CORS's.
 * Returns true when it answered.
 */
export function createWrongMethodHandler(
  allowedMethods: () => ReadonlyMap<string, readonly string[]>,
): (...args: Parameters<RequestHandler>) => boolean {
  return (req, res) => {
    if (req.method === "POST" || req.method === "OPTIONS") return false;
    // Protocol clients (a Connect client sends its protocol version; gRPC and gRPC-Web their
    // content types) expect the bare 405 the protocols specify (the conformance suite checks it);
    // this answer is for a person with curl or a browser.
    if (req.headers["connect-protocol-version"] !== undefined) return false;
    if (/^application\/grpc/.test(req.headers["content-type"] ?? "")) return false;
    const url = req.url ?? "";
    const query = url.indexOf("?");
    const path = query < 0 ? url : url.slice(0, query);
    const allowed = allowedMethods().get(path);
    if (allowed === undefined || allowed.includes(req.method ?? "")) return false;
    const body = JSON.stringify({
      code: "unimplemented",
      message: `${quote(req.method ?? "")} is not allowed on ${quote(path)}: Connect calls are ${allowed.join(" or ")} (REST paths are listed at /docs)`,
    });
    res.statusCode = 405;
    res.setHeader("allow", allowed.join(", "));
    res.setHeader("content-type", "application/json");
    res.setHeader("content-length", String(Buffer.byteLength(body)));
    res.end(body);
    return true;
  };
}

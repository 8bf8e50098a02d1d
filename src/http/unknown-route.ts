import { quote } from "../domain/errors.ts";
import type { RequestHandler } from "./dual-protocol-server.ts";

/**
 * Answers a request for a path no service or endpoint serves with `unimplemented`, in the form the
 * caller's protocol expects (the Connect conformance suite checks each): gRPC and gRPC-Web callers
 * get a trailers-only response with grpc-status 12, everyone else (Connect, curl) HTTP 404 with a
 * Connect error body, which Connect clients read as unimplemented too.
 */
export function answerUnknownRoute(...[req, res]: Parameters<RequestHandler>): void {
  const contentType = req.headers["content-type"] ?? "";
  if (/^application\/grpc(-web(-text)?)?([+;]|$)/.test(contentType)) {
    res.statusCode = 200;
    res.setHeader("content-type", contentType);
    res.setHeader("grpc-status", "12");
    // Percent-encoded, as grpc-message must be; free of the characters gRPC clients decode unevenly.
    res.setHeader("grpc-message", encodeURIComponent("no such service or method"));
    res.end();
    return;
  }
  res.statusCode = 404;
  res.setHeader("content-type", "application/json");
  // The path is the caller's: quoted short, as any echoed input.
  const path = (req.url ?? "").split("?", 1)[0] ?? "";
  // A person who opened the root (or mistyped a path) in a browser or with curl: say where the
  // routes are listed.
  res.end(
    JSON.stringify({
      code: "unimplemented",
      message: `no route for ${req.method} ${quote(path)}: the API and its paths are described at /docs`,
    }),
  );
}

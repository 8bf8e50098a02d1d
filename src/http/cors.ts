import { cors } from "@connectrpc/connect";
import type { RequestHandler } from "./dual-protocol-server.ts";

/** Headers of this service that browsers may send and read, beyond Connect's own. */
const APP_REQUEST_HEADERS = ["Idempotency-Key", "X-Request-Id", "Authorization"];
const APP_RESPONSE_HEADERS = ["X-Request-Id", "RateLimit", "RateLimit-Policy", "Retry-After"];
/** Methods of the REST paths (google.api.http rules) beyond Connect's GET and POST. */
const REST_METHODS = ["PUT", "PATCH", "DELETE"];

/**
 * CORS for browser callers, with Connect's published header lists, for the origins the operator
 * configured (["*"] for any). With no origins configured it adds nothing, so browsers on other
 * origins are refused by their own same-origin policy. Returns true when it answered the request
 * itself (a preflight).
 */
export function createCorsHandler(options: {
  origins: readonly string[];
}): (...args: Parameters<RequestHandler>) => boolean {
  const origins = new Set(options.origins);
  const any = origins.has("*");
  const allowMethods = [...cors.allowedMethods, ...REST_METHODS].join(", ");
  const allowHeaders = [...cors.allowedHeaders, ...APP_REQUEST_HEADERS].join(", ");
  const exposeHeaders = [...cors.exposedHeaders, ...APP_RESPONSE_HEADERS].join(", ");
  return (req, res) => {
    const origin = req.headers.origin;
    if (origin === undefined) return false;
    if (origins.size === 0) {
      if (req.method !== "OPTIONS" || req.headers["access-control-request-method"] === undefined)
        return false;
      // A browser's preflight to a server that allows no other origin: the browser refuses the
      // call either way, but whoever looks at the answer learns what to set.
      const body = JSON.stringify({
        code: "permission_denied",
        message:
          "cross-origin calls are not enabled on this server: set CORS_ORIGINS to the origins browsers may call from (for example CORS_ORIGINS=http://localhost:5173, or * for any)",
      });
      res.statusCode = 403;
      res.setHeader("content-type", "application/json");
      res.setHeader("content-length", String(Buffer.byteLength(body)));
      res.end(body);
      return true;
    }
    const allowed = any || origins.has(origin);
    if (allowed) {
      res.setHeader("Access-Control-Allow-Origin", any ? "*" : origin);
      res.setHeader("Access-Control-Expose-Headers", exposeHeaders);
    }
    if (!any) res.setHeader("Vary", "Origin");
    if (req.method !== "OPTIONS" || req.headers["access-control-request-method"] === undefined) return false;
    if (allowed) {
      res.setHeader("Access-Control-Allow-Methods", allowMethods);
      res.setHeader("Access-Control-Allow-Headers", allowHeaders);
      res.setHeader("Access-Control-Max-Age", "7200");
    }
    res.statusCode = 204;
    res.end();
    return true;
  };
}

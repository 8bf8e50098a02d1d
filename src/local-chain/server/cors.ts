import type * as http from "node:http";

/**
 * How long a browser may keep a preflight's answer: Agave's RPC server sets `cors_max_age(86400)`
 * on jsonrpc-http-server.
 */
const PREFLIGHT_MAX_AGE_SECONDS = 86_400;

/** Host names of pages served from this machine (an explorer on localhost, the service's /docs). */
const LOOPBACK_NAMES = new Set(["localhost", "127.0.0.1", "[::1]"]);

/** Which web pages may call the local chain's ports, and the CORS headers that tell browsers so. */
export interface ChainCors {
  /**
   * Whether a request with this Origin header may be served: none (kit, web3.js, curl and other
   * tools send none), a page served from this machine, or an origin LOCAL_SOLANA_ALLOWED_ORIGINS names.
   */
  allows(origin: string | undefined): boolean;
  /** Sets `access-control-allow-origin` (the request's own origin, never `*`) on an allowed page's answer. */
  apply(req: http.IncomingMessage, res: http.ServerResponse): void;
  /** A preflight's extra headers, for an allowed origin only. */
  preflightHeaders(req: http.IncomingMessage): http.OutgoingHttpHeaders;
}

/**
 * CORS for the local chain's port. A validator answers any origin (`*`) and so did this port; but
 * this one serves cheatcodes and a faucet on the developer's machine, and a public page in Chrome
 * reaches a loopback port when the port grants Private Network Access. So: pages served from
 * localhost, 127.0.0.1 or [::1] (any port, http or https) may call it, their origin echoed; other
 * origins only when `allowedOrigins` (LOCAL_SOLANA_ALLOWED_ORIGINS) names them, and only those get
 * the private-network grant, on a preflight that asks for it. Requests without an Origin (tools,
 * not browsers) get no CORS header, as on a validator.
 */
export function createChainCors(options: { readonly allowedOrigins?: readonly string[] } = {}): ChainCors {
  const listed = new Set(
    (options.allowedOrigins ?? []).map((origin) => originOf(origin)).filter((origin) => origin !== ""),
  );
  const isListed = (origin: string) => listed.has(originOf(origin));
  const allows = (origin: string | undefined) => {
    if (origin === undefined) return true;
    // "null" (a sandboxed frame, a file: page) and anything else that is not an http(s) origin: no.
    const normal = originOf(origin);
    return normal !== "" && (listed.has(normal) || isLoopbackOrigin(normal));
  };
  return {
    allows,
    apply(req, res) {
      const origin = req.headers.origin;
      if (origin === undefined || !allows(origin)) return;
      res.setHeader("access-control-allow-origin", origin);
      res.setHeader("vary", "Origin");
    },
    preflightHeaders(req) {
      const origin = req.headers.origin;
      if (origin === undefined || !allows(origin)) return {};
      const asked = req.headers["access-control-request-headers"];
      return {
        "access-control-allow-methods": "OPTIONS, POST",
        // jsonrpc-http-server's default allows any header, echoing what the browser asked.
        ...(asked === undefined || asked === "" ? {} : { "access-control-allow-headers": asked }),
        // Private Network Access: a public page reaches this machine's port only when it is a
        // listed origin and its browser asks; a page on this machine needs no such grant.
        ...(isListed(origin) && req.headers["access-control-request-private-network"] === "true"
          ? { "access-control-allow-private-network": "true" }
          : {}),
        "access-control-max-age": String(PREFLIGHT_MAX_AGE_SECONDS),
      };
    },
  };
}

/** An origin as browsers send it (scheme and host lower case, no trailing slash); "" when it is none. */
function originOf(text: string): string {
  try {
    const url = new URL(text);
    return url.protocol === "http:" || url.protocol === "https:" ? url.origin : "";
  } catch {
    return "";
  }
}

function isLoopbackOrigin(origin: string): boolean {
  return LOOPBACK_NAMES.has(new URL(origin).hostname);
}

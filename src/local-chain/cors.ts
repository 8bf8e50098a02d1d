import type * as http from "node:http";

/**
 * How long a browser may keep a preflight's answer: Agave's RPC server sets `cors_max_age(86400)`
 * on jsonrpc-http-server.
 */
const PREFLIGHT_MAX_AGE_SECONDS = 86_400;

/**
 * CORS as a validator's RPC port answers it (jsonrpc-http-server with
 * `DomainsValidation::AllowOnly([AccessControlAllowOrigin::Any])`): any origin may call, so a dApp
 * in a browser, or the service's own /docs page, can use the chain. A request that names an
 * origin gets `access-control-allow-origin: *` on whatever it is answered (a refusal too, so the
 * page can read why); one without an Origin gets no CORS header, as there. The port holds no
 * cookies or credentials, which is what makes `*` safe here as on a validator.
 */
export function applyCors(req: http.IncomingMessage, res: http.ServerResponse): void {
  if (req.headers.origin === undefined) return;
  res.setHeader("access-control-allow-origin", "*");
}

/**
 * A preflight's extra headers: the methods the port takes, the headers the browser asked to send
 * (jsonrpc-http-server's default allows any, echoing them back), and how long to keep the answer.
 */
export function preflightHeaders(req: http.IncomingMessage): http.OutgoingHttpHeaders {
  if (req.headers.origin === undefined) return {};
  const asked = req.headers["access-control-request-headers"];
  return {
    "access-control-allow-methods": "OPTIONS, POST",
    ...(asked === undefined || asked === "" ? {} : { "access-control-allow-headers": asked }),
    // Private Network Access: a public page reaches this machine's port only when its browser
    // asks for it, and only then is it told yes; unasked, the header is not volunteered.
    ...(req.headers["access-control-request-private-network"] === "true"
      ? { "access-control-allow-private-network": "true" }
      : {}),
    "access-control-max-age": String(PREFLIGHT_MAX_AGE_SECONDS),
  };
}

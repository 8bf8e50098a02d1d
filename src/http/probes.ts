import type { RequestHandler } from "./dual-protocol-server.ts";

/**
 * Plain HTTP endpoints for orchestrators, served where no RPC matched: `/healthz` (liveness: the
 * process serves) and `/readyz` (readiness: dependencies reachable and not shutting down).
 * Returns false for any other path so the caller can answer 404.
 *
 * `/readyz` also lists `warnings`: what an operator must fix that taking this replica out of
 * rotation would not (the executor's funds are every replica's), so they do not change the status.
 */
export function createProbeHandler(options: {
  isReady: () => Promise<boolean>;
  /** Problems worth an operator's eye that readiness does not hinge on. */
  warnings?: () => readonly string[];
}): (...args: Parameters<RequestHandler>) => boolean {
  const withWarnings = (body: { status: string }) => {
    const warnings = options.warnings?.() ?? [];
    return warnings.length === 0 ? body : { ...body, warnings };
  };
  return (req, res) => {
    const path = req.url?.split("?", 1)[0];
    if (req.method !== "GET" && req.method !== "HEAD") return false;
    if (path === "/healthz") {
      send(res, 200, { status: "ok" });
      return true;
    }
    if (path === "/readyz") {
      options.isReady().then(
        (ready) => send(res, ready ? 200 : 503, withWarnings({ status: ready ? "ready" : "not ready" })),
        () => send(res, 503, withWarnings({ status: "not ready" })),
      );
      return true;
    }
    return false;
  };
}

function send(res: Parameters<RequestHandler>[1], status: number, body: object): void {
  const text = JSON.stringify(body);
  res.statusCode = status;
  res.setHeader("content-type", "application/json");
  res.setHeader("cache-control", "no-store");
  res.end(text);
}

import type { Registry } from "prom-client";
import type { RequestHandler } from "./dual-protocol-server.ts";

/**
 * `GET /metrics`: the registry in Prometheus' text format, for scraping. Served where no RPC
 * matched, beside the probes. Returns false for any other request so the caller can answer 404.
 */
export function createMetricsEndpoint(options: {
  registry: Registry;
}): (...args: Parameters<RequestHandler>) => boolean {
  const { registry } = options;
  return (req, res) => {
    if (req.method !== "GET" || req.url?.split("?", 1)[0] !== "/metrics") return false;
    registry.metrics().then(
      (text) => {
        res.statusCode = 200;
        res.setHeader("content-type", registry.contentType);
        res.setHeader("cache-control", "no-store");
        res.end(text);
      },
      () => {
        res.statusCode = 500;
        res.setHeader("content-type", "text/plain");
        res.end("metrics collection failed\n");
      },
    );
    return true;
  };
}

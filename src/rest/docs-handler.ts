import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { gzipSync } from "node:zlib";
import type { RequestHandler } from "../http/dual-protocol-server.ts";

type NodeHandler = (...args: Parameters<RequestHandler>) => boolean;

/** The files of swagger-ui-dist the page loads; nothing else of the package is reachable. */
const SWAGGER_FILES: Record<string, string> = {
  "swagger-ui.css": "text/css; charset=utf-8",
  "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
  "favicon-32x32.png": "image/png",
  "favicon-16x16.png": "image/png",
};

/**
 * The page may load only its own files: no inline script, nothing from elsewhere. Swagger UI sets
 * inline styles and shows data: images, hence those two allowances.
 */
const PAGE_CSP =
  "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; " +
  "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'";

interface Asset {
  readonly type: string;
  readonly bytes: Buffer;
  readonly etag: string;
  /** Compressed once on first demand, for clients that accept gzip. */
  gzipped?: Buffer;
  readonly cacheControl: string;
  readonly headers?: Record<string, string>;
}

/**
 * The API's documentation, served from the project's own files and dependencies (no CDN):
 * `GET /openapi.json` (the document generated from the protos, gen/openapi/openapi.json) and
 * `GET /docs` (Swagger UI rendering it, from swagger-ui-dist). Swagger UI's files live under a
 * path holding the package's version, so browsers may cache them for good; the page and the
 * document are revalidated (ETag) on every load. Returns false for any other request.
 */
export function createDocsHandler(options: { openApiFile?: URL } = {}): NodeHandler {
  const require = createRequire(import.meta.url);
  const swaggerDir = dirname(require.resolve("swagger-ui-dist/package.json"));
  const version = (JSON.parse(readFileSync(join(swaggerDir, "package.json"), "utf8")) as { version: string })
    .version;
  const revalidate = "no-cache";
  const immutable = "public, max-age=31536000, immutable";
  const assets = new Map<string, () => Asset>();
  const add = (path: string, load: () => Omit<Asset, "etag">) => {
    let asset: Asset | undefined;
    // Read on first request: most servers (and tests) never serve the docs.
    assets.set(path, () => {
      asset ??= (() => {
        const a = load();
        return { ...a, etag: `"${createHash("sha256").update(a.bytes).digest("base64url").slice(0, 27)}"` };
      })();
      return asset;
    });
  };
  const openApiFile = options.openApiFile ?? new URL("../../gen/openapi/openapi.json", import.meta.url);
  add("/openapi.json", () => ({
    type: "application/json",
    bytes: readFileSync(openApiFile),
    cacheControl: revalidate,
  }));
  const here = new URL("docs/", import.meta.url);
  add("/docs", () => ({
    type: "text/html; charset=utf-8",
    bytes: Buffer.from(readFileSync(new URL("index.html", here), "utf8").replaceAll("{{VERSION}}", version)),
    cacheControl: revalidate,
    headers: { "content-security-policy": PAGE_CSP, "x-frame-options": "DENY" },
  }));
  add("/docs/docs.js", () => ({
    type: "text/javascript; charset=utf-8",
    bytes: readFileSync(new URL("docs.js", here)),
    cacheControl: revalidate,
  }));
  for (const [file, type] of Object.entries(SWAGGER_FILES)) {
    add(`/docs/swagger-ui/${version}/${file}`, () => ({
      type,
      bytes: readFileSync(join(swaggerDir, file)),
      cacheControl: immutable,
    }));
  }

  return (req, res) => {
    if (req.method !== "GET" && req.method !== "HEAD") return false;
    const path = req.url?.split("?", 1)[0] ?? "";
    if (path === "/docs/") {
      // The page's relative links need it at /docs.
      res.statusCode = 308;
      res.setHeader("location", "../docs");
      res.end();
      return true;
    }
    const load = assets.get(path);
    if (load === undefined) return false;
    const asset = load();
    res.setHeader("content-type", asset.type);
    res.setHeader("cache-control", asset.cacheControl);
    res.setHeader("etag", asset.etag);
    res.setHeader("x-content-type-options", "nosniff");
    res.setHeader("vary", "accept-encoding");
    for (const [name, value] of Object.entries(asset.headers ?? {})) res.setHeader(name, value);
    if (req.headers["if-none-match"] === asset.etag) {
      res.statusCode = 304;
      res.end();
      return true;
    }
    let body = asset.bytes;
    const compressible = !asset.type.startsWith("image/");
    if (compressible && /\bgzip\b/.test(String(req.headers["accept-encoding"] ?? ""))) {
      asset.gzipped ??= gzipSync(asset.bytes);
      body = asset.gzipped;
      res.setHeader("content-encoding", "gzip");
    }
    res.setHeader("content-length", String(body.byteLength));
    res.statusCode = 200;
    if (req.method === "HEAD") res.end();
    else res.end(body);
    return true;
  };
}

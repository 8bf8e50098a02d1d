/**
 * A tiny web server for browser tests: a page on its own origin that runs the project's
 * TypeScript in the browser with no bundler and no new dependency. npm packages are served from
 * node_modules as the ES modules they ship, found through an import map built from their
 * package.json `exports`; the project's .ts files (gen/, test/browser/) are served as JavaScript
 * by Node's own type stripping, so their relative imports resolve as they do under Node.
 */
import { readFile } from "node:fs/promises";
import * as http from "node:http";
import { stripTypeScriptTypes } from "node:module";
import type { AddressInfo } from "node:net";
import { join, normalize } from "node:path";

const root = new URL("../..", import.meta.url).pathname;

/** Folders of the project whose TypeScript the page may load. */
const TS_DIRS = ["gen/", "test/browser/"];

export interface PageServer {
  /** The page's origin, e.g. http://127.0.0.1:41234 (a page at `${origin}/`). */
  readonly origin: string;
  close(): Promise<void>;
}

/** Serves `/` (an empty page with the import map), the packages' modules and the project's .ts files. */
export async function startPageServer(options: { packages: readonly string[] }): Promise<PageServer> {
  const imports: Record<string, string> = {};
  for (const name of options.packages) {
    const manifest = JSON.parse(await readFile(join(root, "node_modules", name, "package.json"), "utf8")) as {
      exports: Record<string, { import?: string } | string>;
    };
    for (const [subpath, target] of Object.entries(manifest.exports)) {
      const file = typeof target === "string" ? target : target.import;
      if (file === undefined || subpath.includes("*")) continue;
      imports[join(name, subpath)] = `/${join("node_modules", name, file)}`;
    }
  }
  const page = `<!doctype html><html><head><meta charset="utf-8"><title>browser client</title>
<script type="importmap">${JSON.stringify({ imports })}</script></head><body></body></html>`;

  const server = http.createServer((req, res) => {
    const path = normalize(decodeURIComponent(new URL(req.url ?? "/", "http://x").pathname)).slice(1);
    const send = (status: number, type: string, body: string | Buffer) => {
      res.writeHead(status, { "content-type": type, "cache-control": "no-store" });
      res.end(body);
    };
    if (path === "") return send(200, "text/html; charset=utf-8", page);
    const isPackage = options.packages.some((name) => path.startsWith(`node_modules/${name}/`));
    const isTs = path.endsWith(".ts") && TS_DIRS.some((dir) => path.startsWith(dir));
    if (path.includes("..") || !(isPackage || isTs)) return send(404, "text/plain", "not found");
    readFile(join(root, path), "utf8").then(
      (source) => send(200, "text/javascript; charset=utf-8", isTs ? stripTypeScriptTypes(source) : source),
      () => send(404, "text/plain", "not found"),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

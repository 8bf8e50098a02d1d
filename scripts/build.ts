/**
 * Bundles the service for `npm start` and the container image: src/ and gen/ with their
 * dependencies, into a few ES modules in dist/src/, and copies the files they read at run time
 * (every file under src/ and gen/ that is not TypeScript) to dist/. `npm ci` builds
 * (postinstall); `npm start` rebuilds first when a source is newer than the last build
 * (`--if-stale`), so it never runs stale code. Tests run the sources; `npm run check` type-checks.
 *
 * Why a bundle, measured (docs/performance.md, "Start and memory"): Node runs plain JavaScript without loading
 * its type stripper (about 17 MB a process), and one bundle instead of the 500 files the service
 * and its dependencies come in saves another 5 MB of idle RSS (the ES module loader keeps a
 * record, a resolution and a package.json for every file) and a third of the start.
 *
 *   node scripts/build.ts             (npm run build)
 *   node scripts/build.ts --if-stale  (only when src/, gen/ or the build settings changed)
 *
 * Entry points: dist/src/main.js (the service), dist/src/local-chain.js (the chain alone),
 * dist/src/local-chain-worker.js (the embedded chain's thread), dist/src/prepare-genesis.js. Code loaded on first use (the MongoDB stores, the token programs,
 * the embedded chain) stays in chunks of its own, loaded as late as it is from the sources.
 */
import { cpSync, existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { build, type Plugin } from "esbuild";

const root = new URL("..", import.meta.url).pathname;
const dist = join(root, "dist");
const out = join(dist, "src");
const stamp = join(dist, ".built");
const SOURCES = ["src", "gen"];
const SETTINGS = ["tsconfig.json", "package-lock.json", "scripts/build.ts"];
/**
 * Left to node_modules: packages that find files of their own at run time (pino's worker,
 * LiteSVM's native binary, swagger-ui's assets) or that load optional packages only if installed
 * (the MongoDB driver, loaded only with MONGODB_URI anyway).
 */
const EXTERNAL = ["litesvm", "pino", "pino-pretty", "mongodb", "swagger-ui-dist"];

function* files(dir: string): Generator<string> {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* files(path);
    else yield path;
  }
}

/** The newest modification time among the sources and the build settings. */
function newestSource(): number {
  let newest = 0;
  for (const dir of SOURCES)
    for (const file of files(join(root, dir))) newest = Math.max(newest, statSync(file).mtimeMs);
  for (const file of SETTINGS) newest = Math.max(newest, statSync(join(root, file)).mtimeMs);
  return newest;
}

/**
 * Every module keeps the `import.meta.url` it would have compiled file by file
 * (src/token/catalog.ts: dist/src/token/catalog.js), so a file it reads next to itself, or a
 * package it resolves from there, is found where the build copied it. In a bundle,
 * `import.meta.url` would be the chunk's, the same for all the modules in it; every output lands
 * in dist/src/, so the module's place is known relative to any chunk.
 */
const ownImportMetaUrl: Plugin = {
  name: "own-import-meta-url",
  setup(b) {
    b.onLoad({ filter: /\.ts$/ }, (args) => {
      const source = readFileSync(args.path, "utf8");
      if (!source.includes("import.meta.url")) return undefined;
      const place = `./${relative(out, join(dist, relative(root, args.path))).replace(/\.ts$/, ".js")}`;
      return {
        contents: source.replaceAll(
          "import.meta.url",
          `new URL(${JSON.stringify(place)}, import.meta.url).href`,
        ),
        loader: "ts",
      };
    });
  },
};

if (process.argv.includes("--if-stale") && existsSync(stamp) && statSync(stamp).mtimeMs >= newestSource()) {
  process.exit(0);
}

const started = performance.now();
// A file deleted from the sources must not live on in dist/: start clean.
rmSync(dist, { recursive: true, force: true });
await build({
  absWorkingDir: root,
  entryPoints: {
    main: "src/main.ts",
    "local-chain": "src/local-chain/main.ts",
    // The embedded chain's worker thread (src/local-chain/worker/local-chain-worker-host.ts starts it).
    "local-chain-worker": "src/local-chain/worker/local-chain-worker.ts",
    "prepare-genesis": "src/local-chain/prepare-genesis.ts",
  },
  outdir: out,
  chunkNames: "chunk-[hash]",
  bundle: true,
  splitting: true,
  format: "esm",
  platform: "node",
  target: "node24",
  external: EXTERNAL,
  // CommonJS dependencies (prom-client, among others) call require(); give every chunk one.
  banner: {
    js: 'import { createRequire as __bundleCreateRequire } from "node:module"; const require = __bundleCreateRequire(import.meta.url);',
  },
  plugins: [ownImportMetaUrl],
  minifyWhitespace: true,
  minifySyntax: true,
  sourcemap: true,
  logLevel: "warning",
});
for (const dir of SOURCES) {
  for (const file of files(join(root, dir))) {
    if (file.endsWith(".ts")) continue;
    cpSync(file, join(dist, relative(root, file)));
  }
}
writeFileSync(stamp, `${new Date().toISOString()}\n`);
console.log(`built dist/ in ${((performance.now() - started) / 1000).toFixed(1)} s`);

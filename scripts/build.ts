/**
 * Compiles src/ and gen/ to dist/ (tsconfig.build.json) and copies the files they read at run
 * time (every file there that is not TypeScript), for `npm start` and the container image: Node
 * runs plain JavaScript without loading its type stripper, which costs every process about 17 MB
 * and a third of its start. `npm ci` builds (postinstall); `npm start` rebuilds first when a
 * source is newer than the last build (`--if-stale`), so it never runs stale code.
 *
 *   node scripts/build.ts             (npm run build)
 *   node scripts/build.ts --if-stale  (only when src/, gen/ or the build settings changed)
 */
import { execFileSync } from "node:child_process";
import { cpSync, existsSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join, relative } from "node:path";

const root = new URL("..", import.meta.url).pathname;
const dist = join(root, "dist");
const stamp = join(dist, ".built");
const SOURCES = ["src", "gen"];
const SETTINGS = ["tsconfig.json", "tsconfig.build.json", "package-lock.json"];

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

if (process.argv.includes("--if-stale") && existsSync(stamp) && statSync(stamp).mtimeMs >= newestSource()) {
  process.exit(0);
}

const started = performance.now();
// A file deleted from the sources must not live on in dist/: start clean.
rmSync(dist, { recursive: true, force: true });
const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
execFileSync(process.execPath, [tsc, "-p", join(root, "tsconfig.build.json")], { stdio: "inherit" });
for (const dir of SOURCES) {
  for (const file of files(join(root, dir))) {
    if (file.endsWith(".ts")) continue;
    const target = join(dist, relative(root, file));
    cpSync(file, target);
  }
}
writeFileSync(stamp, `${new Date().toISOString()}\n`);
console.log(`built dist/ in ${((performance.now() - started) / 1000).toFixed(1)} s`);

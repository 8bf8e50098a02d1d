import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";

/** The node flags `npm start` runs the service with, so benchmarks measure what users run. */
export function npmStartFlags(root: string): string[] {
  return npmStartCommand(root).filter((word) => word.startsWith("--"));
}

/**
 * The script `npm start` runs (the bundled dist/src/main.js), built first if a source is newer,
 * as `npm start` itself does; `name` picks another entry point of the same bundle.
 */
export function npmStartScript(root: string, name: "main" | "local-chain" = "main"): string {
  execFileSync(process.execPath, [join(root, "scripts/build.ts"), "--if-stale"], { stdio: "inherit" });
  const script = npmStartCommand(root).find((word) => word.endsWith(".js")) as string;
  return script.replace(/main\.js$/, `${name}.js`);
}

/** The words of `npm start`'s command in the tree at `root` (node, its flags, the script). */
export function npmStartCommand(root: string): string[] {
  return npmStartWords(root).filter((word) => !ENV_WORD.test(word));
}

/**
 * The environment `npm start` sets before its command (`NAME=value` words ahead of `node`), so
 * that what runs the service the way `npm start` does sets it too.
 */
export function npmStartEnv(root: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const word of npmStartWords(root)) {
    if (!ENV_WORD.test(word)) break;
    const at = word.indexOf("=");
    env[word.slice(0, at)] = word.slice(at + 1);
  }
  return env;
}

const ENV_WORD = /^[A-Z_][A-Z0-9_]*=/;

function npmStartWords(root: string): string[] {
  return (npmScript(root, "start") as string).split(/\s+/);
}

/** The package.json script `name` of the tree at `root`, if it has one. */
export function npmScript(root: string, name: string): string | undefined {
  const scripts = JSON.parse(readFileSync(join(root, "package.json"), "utf8")).scripts as Record<
    string,
    string
  >;
  return scripts[name];
}

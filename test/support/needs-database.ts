import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

/**
 * Whether the test files a run was asked for (`npx vitest run test/a.test.ts b`: the positional
 * filters of the command line, matched as vitest matches them, as substrings of the path) could
 * use the database: one of them, or a test support file it imports (transitively), names the
 * injected database URI. With no filter (the whole suite) the answer is yes. The global setup then
 * builds and starts FerretDB only when some file may use it.
 */
/** How a file asks for the database: the injected URI (written in pieces, so this file does not match). */
const NEEDLES = [new RegExp(`inject\\("mongo${"Uri"}"\\)`), new RegExp(`mongo${"Uri"}\\b`)];

export function runNeedsDatabase(argv: readonly string[], root: string): boolean {
  const run = argv.findIndex((a) => a === "run" || a === "watch" || a === "related");
  const args = argv.slice(run < 0 ? 2 : run + 1);
  // Values of options (`--config vitest.slow.config.ts`, `-t name`) are not file filters.
  const valued = /^--?(config|c|t|testNamePattern|project|reporter|pool|dir|root|r)$/;
  const filters = args.filter((a, i) => !a.startsWith("-") && !valued.test(args[i - 1] ?? ""));
  if (filters.length === 0) return true;
  const tests = listTests(join(root, "test")).map((f) => relative(root, f));
  const chosen = tests.filter((f) => filters.some((filter) => f.includes(filter.replace(/^\.\//, ""))));
  if (chosen.length === 0) return true;
  const seen = new Set<string>();
  const uses = (file: string): boolean => {
    if (seen.has(file) || !existsSync(file)) return false;
    seen.add(file);
    const text = readFileSync(file, "utf8");
    if (NEEDLES.some((needle) => needle.test(text))) return true;
    for (const [, spec] of text.matchAll(/from "(\.{1,2}\/[^"]+\.ts)"/g)) {
      const next = resolve(dirname(file), spec as string);
      if (next.startsWith(join(root, "test")) && uses(next)) return true;
    }
    return false;
  };
  return chosen.some((f) => uses(join(root, f)));
}

function listTests(directory: string): string[] {
  return readdirSync(directory, { withFileTypes: true }).flatMap((entry) => {
    const path = join(directory, entry.name);
    if (entry.isDirectory()) return entry.name === "node_modules" ? [] : listTests(path);
    return entry.name.endsWith(".test.ts") ? [path] : [];
  });
}

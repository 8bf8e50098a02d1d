/**
 * Fails when gen/ is not what `buf generate` makes from proto/ now, so a contract change can't
 * land without its generated code. Generates into a temporary folder and compares file by file.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join, relative } from "node:path";

const root = new URL("..", import.meta.url).pathname;
const scratch = mkdtempSync(join(tmpdir(), "gen-check-"));
try {
  // The project's own buf and protoc-gen-es, so the check also works outside `npm run`.
  const PATH = `${join(root, "node_modules/.bin")}${delimiter}${process.env.PATH ?? ""}`;
  execFileSync("buf", ["generate", "-o", scratch], {
    cwd: root,
    stdio: "inherit",
    env: { ...process.env, PATH },
  });
  const committed = listFiles(join(root, "gen"));
  const fresh = listFiles(join(scratch, "gen"));
  const stale = [...new Set([...committed.keys(), ...fresh.keys()])].filter(
    (file) => committed.get(file) !== fresh.get(file),
  );
  if (stale.length > 0) {
    console.error(`gen/ is stale (run \`npm run generate\` and commit): ${stale.join(", ")}`);
    process.exit(1);
  }
  console.log(`gen/ is up to date (${fresh.size} files)`);
} finally {
  rmSync(scratch, { recursive: true, force: true });
}

function listFiles(dir: string): Map<string, string> {
  const files = new Map<string, string>();
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const path = join(entry.parentPath, entry.name);
    files.set(relative(dir, path), readFileSync(path, "utf8"));
  }
  return files;
}

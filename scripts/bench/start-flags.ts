import { readFileSync } from "node:fs";
import { join } from "node:path";

/** The node flags `npm start` runs the service with, so benchmarks measure what users run. */
export function npmStartFlags(root: string): string[] {
  const scripts = JSON.parse(readFileSync(join(root, "package.json"), "utf8")).scripts as { start: string };
  return scripts.start.split(/\s+/).filter((word) => word.startsWith("--"));
}

import { globSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import dockerignore from "@balena/dockerignore";
import { describe, expect, it } from "vitest";

/*
 * What the Dockerfile copies from the build context must reach the build context: a file that
 * .dockerignore leaves out makes `docker build` fail ("not found") or, inside a copied directory,
 * leaves the image without it. No Docker engine runs here, so the rules are applied with
 * @balena/dockerignore, a port of Docker's own matcher (patterns, `**`, `!` exceptions, the last
 * match wins), to the files each COPY names. test/production-install.test.ts copies the same
 * files itself and never sees .dockerignore, which is why this test exists.
 */

const root = new URL("..", import.meta.url).pathname;
// A CommonJS module whose types declare `export default`: under nodenext the default import is
// `module.exports`, which is the factory itself at run time.
const ignore = dockerignore as unknown as typeof dockerignore.default;

describe("the Dockerfile and .dockerignore", () => {
  it("finds every COPY source from the build context (not from another stage) in the context", () => {
    const sources = contextSources(readFileSync(join(root, "Dockerfile"), "utf8"));
    // The instructions are read at all: the sources the image is known to need are among them.
    expect(sources).toEqual(expect.arrayContaining(["scripts/build.ts", "scripts/keys.ts", "src"]));
    const rules = ignore().add(readFileSync(join(root, ".dockerignore"), "utf8"));
    const left = sources.flatMap((source) => {
      const files = filesOf(source);
      if (files.length === 0) return [`${source} (no such file)`];
      return files.filter((file) => rules.ignores(file));
    });
    expect(left).toEqual([]);
  });

  it("reads the matcher's rules as Docker does: a later `!` re-includes a file of an excluded folder", () => {
    // Guards the test above against a matcher that would let everything through.
    const rules = ignore().add(["scripts", "!scripts/build.ts", "**/*.log"]);
    expect(rules.ignores("scripts/keys.ts")).toBe(true);
    expect(rules.ignores("scripts/build.ts")).toBe(false);
    expect(rules.ignores("src/deep/x.log")).toBe(true);
  });
});

/**
 * The sources of the Dockerfile's COPY and ADD instructions that come from the build context:
 * continuation lines joined, flags (`--chown`, `--link`) dropped, instructions with `--from`
 * (another stage or image) skipped; the shell form and the JSON form alike.
 */
function contextSources(dockerfile: string): string[] {
  const instructions = dockerfile
    .replace(/\\\r?\n/g, " ")
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => /^(COPY|ADD)\s/i.test(line));
  return instructions.flatMap((line) => {
    let words = line.replace(/^\S+\s+/, "").split(/\s+/);
    const flags = words.filter((w) => w.startsWith("--"));
    if (flags.some((flag) => flag.startsWith("--from="))) return [];
    words = words.filter((w) => !w.startsWith("--"));
    const rest = words.join(" ");
    const args = rest.startsWith("[") ? (JSON.parse(rest) as string[]) : words;
    return args.slice(0, -1).map((source) => source.replace(/^\.\//, "").replace(/\/$/, ""));
  });
}

/** The files a COPY source names: itself, or every file under it; globs are expanded. */
function filesOf(source: string): string[] {
  return globSync(source, { cwd: root }).flatMap((path) => walk(path));
}

function walk(path: string): string[] {
  if (!statSync(join(root, path)).isDirectory()) return [path];
  return readdirSync(join(root, path)).flatMap((name) => walk(`${path}/${name}`));
}

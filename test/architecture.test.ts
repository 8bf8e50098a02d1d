/**
 * The import rules docs/architecture.md states, checked against every import in src/ (static
 * imports, `import type`, `export … from` and dynamic `import()` alike, as TypeScript's own
 * pre-processor finds them, comments and strings aside), so the page cannot drift from the code:
 * who may import whom, the local chain's one entry point, and no import cycle.
 */
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, normalize, relative } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("..", import.meta.url));

interface Import {
  /** The importing file, relative to the project. */
  readonly from: string;
  /** A package name, or a project path for relative imports. */
  readonly to: string;
  /** The specifier as written, and its line: what a failure names. */
  readonly spec: string;
  readonly line: number;
}

const sourcesOf = (folder: string) =>
  readdirSync(join(ROOT, folder), { recursive: true, encoding: "utf8" })
    .filter((file) => file.endsWith(".ts") && !file.includes("node_modules"))
    .map((file) => `${folder}/${file}`)
    .sort();

const lineAt = (text: string, pos: number) => text.slice(0, pos).split("\n").length;

function importsOf(from: string): Import[] {
  const text = readFileSync(join(ROOT, from), "utf8");
  return ts.preProcessFile(text, true, true).importedFiles.map(({ fileName: spec, pos }) => ({
    from,
    to: spec.startsWith(".") ? relative(ROOT, normalize(join(ROOT, dirname(from), spec))) : spec,
    spec,
    line: lineAt(text, pos),
  }));
}

const imports: Import[] = sourcesOf("src").flatMap(importsOf);
/** Everything else that may use the local chain: the tests, the scripts, the examples. */
const around: Import[] = ["test", "scripts", "examples"].flatMap(sourcesOf).flatMap(importsOf);
const named = (i: Import) => `${i.from}:${i.line} imports "${i.spec}" (${i.to})`;

/** The room of a project file: `src/<room>/…`, or the file itself at the top of src/. */
const roomOf = (path: string) => {
  const parts = path.split("/");
  return parts.length > 2 ? parts[1] : parts[1]?.replace(/\.ts$/, "");
};
const TRANSPORT = ["rpc", "rest", "lean", "http", "observability", "server"];
const DOMAIN = [
  "agent",
  "auth",
  "chain",
  "events",
  "scheduler",
  "streams",
  "token",
  "upstream",
  "webhooks",
  "local-chain",
];
const isPackage = (to: string, name: string) => to === name || to.startsWith(`${name}/`);
const breaking = (rule: (i: Import) => boolean) => imports.filter(rule).map(named);

describe("who may import whom (docs/architecture.md)", () => {
  it("finds the imports at all", () => {
    expect(imports.length).toBeGreaterThan(500);
    expect(imports).toContainEqual(
      expect.objectContaining({ from: "src/rpc/agent-service.ts", to: "gen/agent/v1/agent_pb.ts" }),
    );
    // Type-only and dynamic imports are imports too.
    expect(imports).toContainEqual(
      expect.objectContaining({ from: "src/service.ts", to: "src/local-chain/index.ts" }),
    );
    // service-chain.ts imports the chain's types statically and the chain itself with import().
    expect(
      imports.filter((i) => i.from === "src/service/service-chain.ts" && i.to === LOCAL_CHAIN_ENTRY),
    ).toHaveLength(2);
    expect(around.length).toBeGreaterThan(500);
  });

  it("src/domain/ imports nothing else of src/", () => {
    expect(
      breaking((i) => roomOf(i.from) === "domain" && i.to.startsWith("src/") && roomOf(i.to) !== "domain"),
    ).toEqual([]);
  });

  it("generated code and connect are imported by the transport rooms only", () => {
    expect(
      breaking(
        (i) =>
          (i.to.startsWith("gen/") || isPackage(i.to, "@connectrpc")) &&
          !TRANSPORT.includes(roomOf(i.from) ?? ""),
      ),
    ).toEqual([]);
  });

  it("the domain rooms never import the transport rooms", () => {
    const transport = ["rpc", "rest", "lean", "http"];
    expect(
      breaking(
        (i) =>
          DOMAIN.includes(roomOf(i.from) ?? "") &&
          i.to.startsWith("src/") &&
          transport.includes(roomOf(i.to) ?? ""),
      ),
    ).toEqual([]);
  });

  it("the MongoDB driver is imported by its adapters, the context that builds them, and pool metrics", () => {
    expect(
      breaking(
        (i) =>
          isPackage(i.to, "mongodb") &&
          !/\/mongo-[a-z-]+\.ts$/.test(i.from) &&
          i.from !== "src/app-context.ts" &&
          roomOf(i.from) !== "observability",
      ),
    ).toEqual([]);
  });

  it("LiteSVM lives in src/local-chain/, which only the composition loads", () => {
    expect(breaking((i) => isPackage(i.to, "litesvm") && roomOf(i.from) !== "local-chain")).toEqual([]);
    expect(
      breaking(
        (i) =>
          i.to.startsWith("src/local-chain/") &&
          roomOf(i.from) !== "local-chain" &&
          roomOf(i.from) !== "service",
      ),
    ).toEqual([]);
  });
});

/** The local chain's one entry point: what the rest of the code may import of it. */
const LOCAL_CHAIN_ENTRY = "src/local-chain/index.ts";
/**
 * The local chain's files that are run by path and never imported: `npm run local-chain`
 * (main.ts, through scripts/build.ts and test/support/main-process.ts), the postinstall's
 * prepare-genesis.ts, and the worker the host starts as a Worker (it is the build's entry too).
 */
const LOADED_BY_PATH = [
  "src/local-chain/main.ts",
  "src/local-chain/prepare-genesis.ts",
  "src/local-chain/worker/local-chain-worker.ts",
];
const insideLocalChain = (path: string) => path.startsWith("src/local-chain/");

/** Paths to the local chain's files written as strings in `file` (a URL, a build entry, a script). */
function localChainPathsIn(file: string): { path: string; line: number; text: string }[] {
  const text = readFileSync(join(ROOT, file), "utf8");
  const literals: { text: string; pos: number }[] = [];
  if (file.endsWith(".ts")) {
    const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
    const visit = (node: ts.Node) => {
      if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) {
        literals.push({ text: node.text, pos: node.getStart(source) });
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  } else {
    for (const m of text.matchAll(/[\w./-]*local-chain\/[\w./-]+\.ts/g))
      literals.push({ text: m[0], pos: m.index });
  }
  return literals
    .filter((l) => /local-chain\/[\w./-]+\.ts$/.test(l.text) && /^(\.{1,2}\/|src\/)/.test(l.text))
    .map((l) => ({
      path: l.text.startsWith(".") ? relative(ROOT, normalize(join(ROOT, dirname(file), l.text))) : l.text,
      line: lineAt(text, l.pos),
      text: l.text,
    }))
    .filter((l) => insideLocalChain(l.path));
}

/** Whether an import loads nothing: `import type`, or `export type … from`. */
function typeOnly(i: Import): boolean {
  const source = ts.createSourceFile(
    i.from,
    readFileSync(join(ROOT, i.from), "utf8"),
    ts.ScriptTarget.Latest,
  );
  return source.statements.some(
    (s) =>
      ((ts.isImportDeclaration(s) && s.importClause?.isTypeOnly === true) ||
        (ts.isExportDeclaration(s) && s.isTypeOnly)) &&
      s.moduleSpecifier !== undefined &&
      ts.isStringLiteral(s.moduleSpecifier) &&
      s.moduleSpecifier.text === i.spec &&
      source.getLineAndCharacterOfPosition(s.moduleSpecifier.getStart(source)).line + 1 === i.line,
  );
}

describe("the local chain's one entry point (docs/architecture.md)", () => {
  const outside = [...imports.filter((i) => !insideLocalChain(i.from)), ...around];

  it("nothing outside src/local-chain/ imports past src/local-chain/index.ts", () => {
    expect(outside.filter((i) => i.to === LOCAL_CHAIN_ENTRY).length).toBeGreaterThan(20);
    expect(outside.filter((i) => insideLocalChain(i.to) && i.to !== LOCAL_CHAIN_ENTRY).map(named)).toEqual(
      [],
    );
  });

  it("paths into it name only the entry point and the files run by path, which exist and nothing imports", () => {
    const files = [
      ...sourcesOf("src").filter((file) => !insideLocalChain(file)),
      // The size and import checks name the tree's files to measure them, not to load them.
      ...["test", "scripts", "examples"]
        .flatMap(sourcesOf)
        .filter((file) => !["test/code-size.test.ts", "test/architecture.test.ts"].includes(file)),
      "package.json",
      "Dockerfile",
    ];
    const paths = files.flatMap((file) => localChainPathsIn(file).map((p) => ({ ...p, file })));
    expect(paths.map((p) => p.path)).toEqual(expect.arrayContaining(LOADED_BY_PATH));
    expect(
      paths
        .filter((p) => p.path !== LOCAL_CHAIN_ENTRY && !LOADED_BY_PATH.includes(p.path))
        .map((p) => `${p.file}:${p.line} names "${p.text}" (${p.path}), not the entry point`),
    ).toEqual([]);
    expect(
      paths
        .filter((p) => !sourcesOf("src").includes(p.path))
        .map((p) => `${p.file}:${p.line} names "${p.text}", which does not exist`),
    ).toEqual([]);
    // The host imports its worker's message types (`import type`), which load nothing.
    expect(
      imports
        .filter((i) => LOADED_BY_PATH.includes(i.to))
        .filter((i) => !typeOnly(i))
        .map(named),
    ).toEqual([]);
  });
});

/**
 * Every import cycle among `edges`, each as the chain of imports that closes it, starting at the
 * cycle's first file in name order: `a.ts:3 imports "./b.ts" (…) → b.ts:9 imports "./a.ts" (…)`.
 */
function importCycles(edges: readonly Import[]): string[] {
  const next = new Map<string, Import[]>();
  for (const edge of edges) {
    if (!edge.to.startsWith("src/")) continue;
    next.set(edge.from, [...(next.get(edge.from) ?? []), edge]);
  }
  // Tarjan's strongly connected components: each of more than one file (or a file that imports
  // itself) holds a cycle.
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const components: string[][] = [];
  const connect = (file: string) => {
    index.set(file, index.size);
    low.set(file, index.get(file) ?? 0);
    stack.push(file);
    onStack.add(file);
    for (const { to } of next.get(file) ?? []) {
      if (!index.has(to)) {
        connect(to);
        low.set(file, Math.min(low.get(file) ?? 0, low.get(to) ?? 0));
      } else if (onStack.has(to)) {
        low.set(file, Math.min(low.get(file) ?? 0, index.get(to) ?? 0));
      }
    }
    if (low.get(file) !== index.get(file)) return;
    const component: string[] = [];
    let top: string | undefined;
    do {
      top = stack.pop();
      if (top === undefined) break;
      onStack.delete(top);
      component.push(top);
    } while (top !== file);
    const selfImport = (next.get(file) ?? []).some((edge) => edge.to === file);
    if (component.length > 1 || selfImport) components.push(component.sort());
  };
  for (const file of [...next.keys()].sort()) if (!index.has(file)) connect(file);
  // In each component, the shortest way from its first file back to it.
  return components.map((component) => {
    const start = component[0] as string;
    const inside = new Set(component);
    const via = new Map<string, Import>();
    const queue = [start];
    for (let at = queue.shift(); at !== undefined; at = queue.shift()) {
      for (const edge of next.get(at) ?? []) {
        if (!inside.has(edge.to) || via.has(edge.to)) continue;
        via.set(edge.to, edge);
        if (edge.to === start) break;
        queue.push(edge.to);
      }
      if (via.has(start)) break;
    }
    const path: Import[] = [];
    for (
      let edge = via.get(start);
      edge !== undefined;
      edge = edge.from === start ? undefined : via.get(edge.from)
    ) {
      path.unshift(edge);
    }
    return path.map(named).join(" → ");
  });
}

describe("no import cycle in src/ (docs/architecture.md)", () => {
  it("finds a cycle where there is one", () => {
    const edge = (from: string, to: string): Import => ({ from, to, spec: `./${to}`, line: 1 });
    expect(
      importCycles([
        edge("src/a.ts", "src/b.ts"),
        edge("src/b.ts", "src/c.ts"),
        edge("src/c.ts", "src/a.ts"),
      ]),
    ).toEqual([
      'src/a.ts:1 imports "./src/b.ts" (src/b.ts) → src/b.ts:1 imports "./src/c.ts" (src/c.ts) → src/c.ts:1 imports "./src/a.ts" (src/a.ts)',
    ]);
  });

  it("no file imports itself through others, type-only and dynamic imports counted", () => {
    expect(importCycles(imports)).toEqual([]);
  });
});

/**
 * The import rules docs/architecture.md states, checked against every import in src/ (static
 * imports, `import type` and dynamic `import()` alike), so the page cannot drift from the code.
 */
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, normalize, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("..", import.meta.url));

interface Import {
  /** The importing file, relative to the project. */
  readonly from: string;
  /** A package name, or a project path for relative imports. */
  readonly to: string;
}

const imports: Import[] = readdirSync(join(ROOT, "src"), { recursive: true, encoding: "utf8" })
  .filter((file) => file.endsWith(".ts"))
  .flatMap((file) => {
    const from = `src/${file}`;
    const text = readFileSync(join(ROOT, from), "utf8");
    return [...text.matchAll(/(?:from|import\()\s*["']([^"']+)["']/g)].map((m) => {
      const spec = m[1] as string;
      return {
        from,
        to: spec.startsWith(".") ? relative(ROOT, normalize(join(ROOT, dirname(from), spec))) : spec,
      };
    });
  });

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
const breaking = (rule: (i: Import) => boolean) =>
  imports.filter(rule).map((i) => `${i.from} imports ${i.to}`);

describe("who may import whom (docs/architecture.md)", () => {
  it("finds the imports at all", () => {
    expect(imports.length).toBeGreaterThan(500);
    expect(imports).toContainEqual({ from: "src/rpc/agent-service.ts", to: "gen/agent/v1/agent_pb.ts" });
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

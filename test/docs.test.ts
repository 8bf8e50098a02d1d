/**
 * The README and docs/ as a reader follows them: every shell block run, command by command, in one
 * bash per file (variables and background jobs carry over, as in a terminal), against the real
 * service on free ports, with only the environment a reader would have. `npm start` lines start the
 * service with the settings their command line gives (test/support/docs-server.ts); every command
 * must exit 0, and where the text shows an answer the real one must have its shape. Blocks that
 * cannot run here are marked `no-test`, counted, and kept few. Then the pages that mirror the code
 * (the configuration table, the REST routes, the links) are checked against it.
 */
import { spawnSync } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { type AddressInfo, createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { CONFIG_VARIABLES } from "../src/config.ts";
import { isDocsServer } from "./support/docs-server-pid.ts";
import { NODE_COMPILE_CACHE } from "./support/main-process.ts";
import { type CodeBlock, codeBlocksOf, commandsOf, shapeMismatches } from "./support/markdown-blocks.ts";
import { freePortPair } from "./support/ports.ts";
import { openShellSession, type ShellSession } from "./support/shell-session.ts";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const FILES = [
  "README.md",
  ...readdirSync(join(ROOT, "docs"))
    .filter((f) => f.endsWith(".md"))
    .sort()
    .map((f) => `docs/${f}`),
];
const BLOCKS = FILES.flatMap((file) => codeBlocksOf(join(ROOT, file), file));
const runnable = (file: string) =>
  BLOCKS.filter((b) => b.file === file && ["sh", "ts"].includes(b.lang) && !b.flags.includes("no-test"));
const startsServer = (block: CodeBlock) => block.lang === "sh" && /(^|\s)npm start\b/m.test(block.text);
/** Pages that only use the default server first, so that it is started once for all of them. */
const RUN_ORDER = [
  ...FILES.filter((f) => !runnable(f).some(startsServer)),
  ...FILES.filter((f) => runnable(f).some(startsServer)),
];
/** Blocks shown but not run: installing, Docker, the test suite and the bench themselves. */
const NO_TEST_BUDGET = 14;
/** A command may take this long (the first transfer agent waits for three runs). */
const COMMAND_MS = 60_000;
/** A stream runs this long before it is stopped, as with Ctrl-C. */
const STREAM_MS = 2_500;

let state: string;
let port: number;
let chainPort: number;
let receiverPort: number;
let clientDir: string;
let database: string;

beforeAll(async () => {
  ensureCurl();
  state = mkdtempSync(join(tmpdir(), "docs-test-"));
  // The chain serves PubSub on its port + 1: that port must be free too.
  chainPort = await freePortPair();
  do [port = 0, receiverPort = 0] = await distinctFreePorts(2);
  while ([port, receiverPort].some((p) => p === chainPort || p === chainPort + 1));
  database = `docs_${process.pid}_${Date.now()}`;
  // A scratch project next to "token-agent-service" (this repository), as docs/api.md has a
  // reader's own project; its node_modules are this repository's, which hold what it installs.
  clientDir = join(state, "my-project");
  mkdirSync(clientDir);
  symlinkSync(ROOT, join(state, "token-agent-service"));
  symlinkSync(join(ROOT, "node_modules"), join(clientDir, "node_modules"));
  writeFileSync(join(clientDir, "package.json"), '{"type":"module"}\n');
});

afterAll(() => {
  try {
    // Only the server docs-server.ts started: its pid may have ended and been taken by another process.
    const pid = Number(readFileSync(join(state, "server.pid"), "utf8"));
    if (isDocsServer(pid)) process.kill(pid, "SIGKILL");
  } catch {}
  rmSync(state, { recursive: true, force: true });
});

/** The reader's ports and database, as the test's: 8080, 8899, 9000 and a local MongoDB. */
function localized(text: string): string {
  return text
    .replaceAll("8080", String(port))
    .replaceAll("8899", String(chainPort))
    .replaceAll("9000", String(receiverPort))
    .replaceAll("mongodb://localhost:27017", inject("mongoUri"));
}

function openSession(): ShellSession {
  return openShellSession({
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? "",
      HOME: process.env.HOME ?? "",
      LANG: "C.UTF-8",
      DOCS_STATE: state,
      DOCS_PORT: String(port),
      DOCS_CHAIN_PORT: String(chainPort),
      // The example's own settings, whose defaults are 8080 and 8899.
      API_URL: `http://localhost:${port}`,
      RPC_URL: `http://127.0.0.1:${chainPort}`,
      // Each run gets a database of its own when a page sets MONGODB_URI.
      MONGODB_DB: database,
      // Node's compile cache for every node the commands start (npm, npx, the examples, the
      // service): what they do is the same, and each start after the first compiles nothing.
      NODE_COMPILE_CACHE,
    },
    // `npm start` is the service on the test's ports; the rest of npm is npm.
    prelude: [
      "set -o pipefail",
      `npm() { if [ "$1" = start ]; then ${JSON.stringify(process.execPath)} ${JSON.stringify(join(ROOT, "test/support/docs-server.ts"))}; else command npm "$@"; fi; }`,
    ].join("\n"),
  });
}

describe("the shell blocks of the README and docs/", () => {
  it("are all marked sh, and few are left unrun", () => {
    // Shell is sh, code is ts; the rest is shown only (diagrams, JSON, YAML). Nothing escapes by
    // being spelled ```bash, and a ts block either runs or says it does not.
    const misnamed = BLOCKS.filter((b) => !["sh", "ts", "text", "json", "yaml"].includes(b.lang));
    expect(misnamed.map((b) => `${b.file}:${b.line} is \`\`\`${b.lang}`)).toEqual([]);
    const unrunTs = BLOCKS.filter(
      (b) => b.lang === "ts" && !b.flags.includes("no-test") && !b.flags.some((f) => f.startsWith("file=")),
    );
    expect(unrunTs.map((b) => `${b.file}:${b.line} is neither "client file=NAME" nor no-test`)).toEqual([]);
    const notRun = BLOCKS.filter((b) => b.flags.includes("no-test"));
    console.log(
      `${notRun.length} blocks are not run:\n${notRun.map((b) => `  ${b.file}:${b.line}`).join("\n")}`,
    );
    expect(notRun.length).toBeLessThanOrEqual(NO_TEST_BUDGET);
    expect(BLOCKS.filter((b) => b.lang === "sh" && !b.flags.includes("no-test")).length).toBeGreaterThan(25);
  });

  it.each(RUN_ORDER)(
    "%s: every command runs as written, and answers as shown",
    async (file) => {
      const blocks = runnable(file);
      if (blocks.length === 0) return;
      const session = openSession();
      const failures: string[] = [];
      try {
        // The reader of any page has the service running as `npm start` starts it, unless the
        // page starts with starting it its own way.
        if (!startsServer(blocks[0] as CodeBlock)) {
          const start = await session.run("npm start", COMMAND_MS);
          expect(start.status, start.stderr).toBe(0);
        }
        for (const block of blocks) failures.push(...(await runBlock(session, block)));
      } finally {
        session.close();
      }
      expect(failures).toEqual([]);
    },
    240_000,
  );
});

async function runBlock(session: ShellSession, block: CodeBlock): Promise<string[]> {
  const client = block.flags.includes("client");
  if (block.lang === "ts") {
    const file = block.flags.find((f) => f.startsWith("file="))?.slice("file=".length);
    if (!client || file === undefined)
      return [`${block.file}:${block.line}: a ts block is "client file=NAME" or no-test`];
    writeFileSync(join(clientDir, file), localized(block.text));
    return [];
  }
  if (block.lang !== "sh") return [];
  const failures: string[] = [];
  if (client) await session.run(`cd ${JSON.stringify(clientDir)}`, 5_000);
  for (const command of commandsOf(block)) {
    let text = localized(command.text);
    // `npm start &`: the reader's server in the background, waited for as a reader waits for it.
    text = text.replace(/(^|\s)npm start\s*&\s*$/, "$1npm start");
    const stream = block.flags.includes("stream");
    if (stream) text = `timeout -s INT ${STREAM_MS / 1000} ${text}`;
    const started = performance.now();
    const result = await session.run(text, COMMAND_MS);
    const ms = Math.round(performance.now() - started);
    if (ms > 1_500 && !stream)
      console.log(`${ms} ms: ${block.file}:${command.line}: ${command.text.split("\n")[0]}`);
    const where = `${block.file}:${command.line}: ${command.text.split("\n")[0]}`;
    const ok = result.status === 0 || (stream && result.status === 124);
    if (!ok) {
      failures.push(
        `${where}\n  exit ${result.status}\n  stdout: ${result.stdout.slice(-600)}\n  stderr: ${result.stderr.slice(-600)}`,
      );
      continue;
    }
    if (stream && result.stdout.trim() === "") failures.push(`${where}\n  the stream printed nothing`);
    if (command.answer === undefined) continue;
    const actual = jsonOf(result.stdout);
    const mismatches =
      actual === undefined ? ["the answer is not JSON"] : shapeMismatches(command.answer, actual);
    if (mismatches.length > 0) {
      failures.push(`${where}\n  ${mismatches.join("\n  ")}\n  answer: ${result.stdout.slice(0, 600)}`);
    }
  }
  if (client) await session.run(`cd ${JSON.stringify(ROOT)}`, 5_000);
  return failures;
}

/** The answer as JSON: the whole output, or its first line that is (npm prints lines of its own). */
function jsonOf(output: string): unknown {
  try {
    return JSON.parse(output);
  } catch {}
  for (const line of output.split("\n")) {
    if (!line.startsWith("{") && !line.startsWith("[")) continue;
    try {
      return JSON.parse(line);
    } catch {}
  }
  return undefined;
}

describe("the pages that mirror the code", () => {
  it("docs/configuration.md lists every variable src/config.ts reads, with its default", () => {
    const rows = readFileSync(join(ROOT, "docs/configuration.md"), "utf8")
      .split("\n")
      .filter((line) => line.startsWith("| `"));
    const documented = new Map<string, string>();
    for (const row of rows) {
      const [names = "", defaults = ""] = row.split(" | ");
      const nameList = [...names.matchAll(/`([A-Z0-9_]+)`/g)].map((m) => m[1] as string);
      const defaultList = defaults.split(" / ");
      for (const [i, name] of nameList.entries()) documented.set(name, (defaultList[i] ?? "").trim());
    }
    const names = Object.keys(CONFIG_VARIABLES);
    expect(names.filter((name) => !documented.has(name))).toEqual([]);
    expect([...documented.keys()].filter((name) => !names.includes(name))).toEqual([]);
    const wrong = Object.entries(CONFIG_VARIABLES)
      .filter(([name, value]) => value !== "" && documented.get(name) !== `\`${value}\``)
      .map(([name, value]) => `${name}: the code says ${value}, the table ${documented.get(name)}`);
    expect(wrong).toEqual([]);
  });

  it("docs/api.md lists every REST route the contract declares, and no other", () => {
    const openapi = JSON.parse(readFileSync(join(ROOT, "gen/openapi/openapi.json"), "utf8")) as {
      paths: Record<string, Record<string, unknown>>;
    };
    const declared = Object.entries(openapi.paths).flatMap(([path, operations]) =>
      Object.keys(operations)
        .filter((m) => ["get", "post", "put", "patch", "delete"].includes(m))
        .map((m) => `${m.toUpperCase()} ${path}`),
    );
    const listed = [
      ...readFileSync(join(ROOT, "docs/api.md"), "utf8").matchAll(
        /^\| `(GET|POST|PUT|PATCH|DELETE) ([^`?]+)/gm,
      ),
    ].map((m) => `${m[1]} ${m[2]}`);
    expect(listed.sort()).toEqual(declared.sort());
  });

  it("the README fits on a few screens, indexes every page of docs/, and every link resolves", () => {
    const readme = readFileSync(join(ROOT, "README.md"), "utf8");
    expect(readme.split("\n").length).toBeLessThanOrEqual(260);
    for (const page of FILES.filter((f) => f.startsWith("docs/"))) expect(readme).toContain(`](${page})`);
    const broken: string[] = [];
    for (const file of FILES) {
      const text = readFileSync(join(ROOT, file), "utf8");
      for (const [, target = ""] of text.matchAll(/\]\(([^)#\s]+)(?:#[^)]*)?\)/g)) {
        if (/^[a-z]+:/.test(target)) continue;
        const resolved = join(ROOT, dirname(file), target);
        if (!existsSync(resolved)) broken.push(`${file}: ${target}`);
      }
    }
    expect(broken).toEqual([]);
  });
});

/** `count` ports nothing listens on, all different (each held open until all are known). */
async function distinctFreePorts(count: number): Promise<number[]> {
  const servers = await Promise.all(
    Array.from(
      { length: count },
      () =>
        new Promise<Server>((resolve, reject) => {
          const server = createServer();
          server.once("error", reject);
          server.listen(0, "127.0.0.1", () => resolve(server));
        }),
    ),
  );
  const ports = servers.map((server) => (server.address() as AddressInfo).port);
  await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
  return ports;
}

/** curl runs the docs' commands; CI machines start bare, so install it when it is missing. */
function ensureCurl(): void {
  if (spawnSync("curl", ["--version"]).status === 0) return;
  process.stderr.write("installing curl for the docs test\n");
  const lock = ["-o", "DPkg::Lock::Timeout=600"];
  const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
  spawnSync("apt-get", [...lock, "update"], { stdio: "inherit", env });
  const installed = spawnSync("apt-get", [...lock, "install", "-y", "--no-install-recommends", "curl"], {
    stdio: "inherit",
    env,
  });
  if (installed.status !== 0)
    throw new Error("curl is missing and could not be installed: install it to run the docs test");
}

import { type ChildProcess, execFile, spawn } from "node:child_process";
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { npmStartCommand, npmStartEnv } from "../scripts/bench/start-flags.ts";

/*
 * What the container image holds, tested without Docker: a scratch copy with production
 * dependencies only (`npm ci --omit=dev`, as the Dockerfile runs it) must start and serve. This
 * fails when runtime code imports a devDependency or a file the image does not copy.
 */

const root = new URL("..", import.meta.url).pathname;
let scratch: string;
let child: ChildProcess | undefined;

beforeAll(async () => {
  scratch = mkdtempSync(join(tmpdir(), "prod-install-"));
  // The compiled tree the image's build stage makes (npm ci made it here; rebuilt if stale).
  await promisify(execFile)(process.execPath, ["scripts/build.ts", "--if-stale"], {
    cwd: root,
    timeout: 120_000,
  });
  // Exactly what the Dockerfile copies.
  for (const entry of ["package.json", "package-lock.json", "dist", "src", "gen", "scripts/keys.ts"]) {
    cpSync(join(root, entry), join(scratch, entry), { recursive: true });
  }
  await promisify(execFile)("npm", ["ci", "--omit=dev", "--ignore-scripts", "--no-audit", "--no-fund"], {
    cwd: scratch,
    timeout: 180_000,
  });
  // As the Dockerfile does: TypeScript comes in as @solana/kit's optional peer, and nothing runs it.
  rmSync(join(scratch, "node_modules", "typescript"), { recursive: true, force: true });
  // As the Dockerfile does after copying the sources: the local chain's genesis, built once.
  await promisify(execFile)(process.execPath, ["dist/src/prepare-genesis.js"], {
    cwd: scratch,
    timeout: 60_000,
  });
}, 260_000);

afterAll(() => {
  child?.kill("SIGKILL");
  rmSync(scratch, { recursive: true, force: true });
});

describe("production install", () => {
  it("holds no development dependencies", () => {
    for (const dev of ["vitest", "typescript", "@biomejs/biome", "pino-pretty", "@grpc/grpc-js"]) {
      expect(existsSync(join(scratch, "node_modules", dev)), dev).toBe(false);
    }
    expect(existsSync(join(scratch, "node_modules", "@connectrpc/connect-node"))).toBe(true);
    // The local chain's runtime is a production dependency, with its native binary for this machine.
    expect(existsSync(join(scratch, "node_modules", "litesvm"))).toBe(true);
  });

  it("runs the keys command (its imports resolve without development dependencies)", async () => {
    const result = await promisify(execFile)(process.execPath, ["scripts/keys.ts"], { cwd: scratch }).catch(
      (error: { code: number; stderr: string }) => error,
    );
    expect(result).toMatchObject({ code: 2 });
    expect((result as { stderr: string }).stderr).toContain("npm run keys -- create --owner NAME");
  });

  it("runs what npm start runs (the image's command and environment are the same)", () => {
    const assignments = npmStartAssignments();
    expect(imageCommand()).toEqual(npmStartCommand(root));
    expect(assignments.length).toBeGreaterThan(0);
    for (const assignment of assignments) expect(imageEnv()).toContain(assignment);
  });

  it("starts, serves a call, and stops cleanly on SIGTERM", async () => {
    // The image's command: the bundled service, with its node flags.
    const [, ...args] = imageCommand();
    const proc = spawn(process.execPath, args, {
      cwd: scratch,
      env: {
        // The environment npm start and the image set for the process (not the image's
        // NODE_ENV, HOST and PORT, which the test sets its own way).
        ...npmStartEnv(root),
        PATH: process.env.PATH,
        PORT: "0",
        HOST: "127.0.0.1",
        LOG_LEVEL: "info",
        LOCAL_SOLANA_RPC_PORT: "0",
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    child = proc;
    const port = await new Promise<number>((resolve, reject) => {
      const lines = createInterface({ input: proc.stdout as NodeJS.ReadableStream });
      lines.on("line", (line) => {
        const entry = JSON.parse(line) as { port?: number };
        if (typeof entry.port === "number") resolve(entry.port);
      });
      proc.once("exit", (code) => reject(new Error(`exited early with ${code}`)));
    });
    const response = await fetch(`http://127.0.0.1:${port}/token.v1.TokenService/GetTokenPrices`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ symbol: "usdc" }),
    });
    expect(response.status).toBe(200);
    const body = (await response.json()) as { success: boolean; data: { symbol: string }[] };
    expect(body.success).toBe(true);
    expect(body.data.map((d) => d.symbol)).toEqual(["USDC"]);
    expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
    // Files the bundle reads next to its modules' own places (scripts/build.ts): the API document
    // and the docs page.
    const openApi = await fetch(`http://127.0.0.1:${port}/openapi.json`);
    expect(openApi.status).toBe(200);
    expect(((await openApi.json()) as { openapi: string }).openapi).toMatch(/^3\./);
    const docs = await fetch(`http://127.0.0.1:${port}/docs`);
    expect(docs.status).toBe(200);
    expect(await docs.text()).toContain("swagger-ui");
    // Token history comes from the embedded local chain: LiteSVM and its genesis are in the install.
    const history = await fetch(
      `http://127.0.0.1:${port}/v1/tokens/EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v/transactions?limit=2`,
    );
    expect(((await history.json()) as { data: unknown[] }).data).toHaveLength(2);

    const exit = new Promise<number | null>((resolve) => proc.once("exit", (code) => resolve(code)));
    proc.kill("SIGTERM");
    expect(await exit).toBe(0);
  });
});

/** The `NAME=value` assignments ahead of `npm start`'s command. */
function npmStartAssignments(): string[] {
  return Object.entries(npmStartEnv(root)).map(([name, value]) => `${name}=${value}`);
}

/** The Dockerfile's ENV assignments (`NAME=value`), continuation lines joined. */
function imageEnv(): string[] {
  const text = readFileSync(join(root, "Dockerfile"), "utf8").replace(/\\\n/g, " ");
  return text
    .split("\n")
    .filter((line) => line.startsWith("ENV "))
    .flatMap((line) => line.slice(4).trim().split(/\s+/));
}

/** The Dockerfile's CMD (exec form): the words the image runs. */
function imageCommand(): string[] {
  const cmd = readFileSync(join(root, "Dockerfile"), "utf8")
    .split("\n")
    .find((line) => line.startsWith("CMD "));
  return JSON.parse((cmd as string).slice(4)) as string[];
}

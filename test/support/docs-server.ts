/**
 * `npm start` as the docs test's shell runs it: the shell's `npm` function calls this script for
 * `npm start`, with the environment the reader's command line gives it (`SCHEDULE_TIME_SCALE=1200
 * npm start`, an exported ADMIN_API_KEY, ...). It starts src/main.ts in the background as the
 * reader's other terminal would, with those settings, on the test's ports instead of 8080 and
 * 8899, and returns once it serves. A server already running with other settings is stopped
 * first, as the reader stops it with Ctrl-C; one with the same settings is kept.
 *
 * Environment of this script: DOCS_STATE (a directory for the pid, settings and log),
 * DOCS_PORT and DOCS_CHAIN_PORT.
 */
import { spawn } from "node:child_process";
import { closeSync, existsSync, openSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { CONFIG_VARIABLES } from "../../src/config.ts";
import { isDocsServer } from "./docs-server-pid.ts";
import { processAlive } from "./proc-stat.ts";

const MAIN = fileURLToPath(new URL("../../src/main.ts", import.meta.url));
const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const state = process.env.DOCS_STATE ?? "";
const pidFile = join(state, "server.pid");
const settingsFile = join(state, "server.json");
const logFile = join(state, "server.log");

/** The reader's settings: every variable of the configuration they set, and NODE_ENV. */
const settings: Record<string, string> = {};
for (const name of [...Object.keys(CONFIG_VARIABLES), "NODE_ENV"]) {
  const value = process.env[name];
  if (value !== undefined) settings[name] = value;
}

const running = existsSync(pidFile) ? Number(readFileSync(pidFile, "utf8")) : undefined;
if (running !== undefined && isDocsServer(running)) {
  if (existsSync(settingsFile) && readFileSync(settingsFile, "utf8") === JSON.stringify(settings))
    process.exit(0);
  await stop(running);
}

const log = openSync(logFile, "w");
const child = spawn(process.execPath, [MAIN], {
  cwd: ROOT,
  detached: true,
  stdio: ["ignore", log, log],
  env: {
    PATH: process.env.PATH ?? "",
    HOME: process.env.HOME ?? "",
    // The test's compile cache (see docs.test.ts), when it gives one.
    ...(process.env.NODE_COMPILE_CACHE === undefined
      ? {}
      : { NODE_COMPILE_CACHE: process.env.NODE_COMPILE_CACHE }),
    ...settings,
    HOST: "127.0.0.1",
    PORT: process.env.DOCS_PORT ?? "",
    LOCAL_SOLANA_RPC_PORT: process.env.DOCS_CHAIN_PORT ?? "",
  },
});
closeSync(log);
child.unref();
writeFileSync(pidFile, String(child.pid));
writeFileSync(settingsFile, JSON.stringify(settings));

const deadline = Date.now() + 30_000;
for (;;) {
  const text = readFileSync(logFile, "utf8");
  if (/"msg":"serving /.test(text)) break;
  if (child.exitCode !== null || !processAlive(child.pid ?? 0) || Date.now() > deadline) {
    process.stderr.write(`npm start did not serve:\n${text}\n`);
    process.exit(1);
  }
  await new Promise((resolve) => setTimeout(resolve, 50));
}

async function stop(pid: number): Promise<void> {
  process.kill(pid, "SIGTERM");
  for (let i = 0; i < 200 && isDocsServer(pid); i++) await new Promise((resolve) => setTimeout(resolve, 50));
  if (isDocsServer(pid)) process.kill(pid, "SIGKILL");
}

/**
 * Where a call's time goes: runs one server under `node --cpu-prof` on core 0, loads it with wrk
 * from core 1 (Connect JSON POST of GetTokenPrices, as the bench does), and prints the CPU time
 * per call by source file and by function, so the service and a peer can be set side by side.
 * Time the process spends idle, and everything before the measured load, are left out.
 *
 *   node scripts/bench/profile.ts service       the service, as `npm start` runs it
 *   node scripts/bench/profile.ts service-proto the service over the Connect protocol's binary codec
 *   node scripts/bench/profile.ts plain         the node:http JSON handler doing the same work
 *   node scripts/bench/profile.ts raw           raw node:http answering the service's bytes
 *   node scripts/bench/profile.ts service-grpc  the service over gRPC (h2load instead of wrk)
 *   node scripts/bench/profile.ts grpcjs        the @grpc/grpc-js server doing the same work
 *
 * BENCH_SECONDS (default 8) sets the measured load; LOG_LEVEL is passed to the service. The peers
 * run with the service's heap flags, as in the bench; PEER_DEFAULT_HEAP=1 runs them on Node's.
 * A system call's row (writev, writeUtf8String) also holds the time the process's other threads
 * (garbage collection, compilers, the thread pool) took the core from the main thread while it
 * was in that call: the profiler samples the main thread by the clock.
 */
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { SourceMap } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { freePort, waitForPort } from "../../test/support/ports.ts";
import { npmStartEnv, npmStartFlags, npmStartScript } from "./start-flags.ts";

const kind = process.argv[2] ?? "service";
const seconds = Number(process.env.BENCH_SECONDS ?? 8);
const root = new URL("../..", import.meta.url).pathname;
const work = mkdtempSync(join(tmpdir(), "profile-"));
const port = await freePort();
const startFlags = npmStartFlags(root);
// What `npm start` sets in the environment (MALLOC_ARENA_MAX), for the servers started here too.
Object.assign(process.env, npmStartEnv(root));
/** The source maps of the bundle's files, read once each (see originalOf). */
const sourceMaps = new Map<string, SourceMap | undefined>();
const peerFlags = process.env.PEER_DEFAULT_HEAP === "1" ? [] : startFlags;

// An empty GetTokenPricesRequest: `{}` in JSON, no bytes at all in binary.
const [body, contentType] = kind === "service-proto" ? ["", "application/proto"] : ["{}", "application/json"];
const script = join(work, "post.lua");
writeFileSync(
  script,
  `wrk.method = "POST"\nwrk.body = "${body}"\nwrk.headers["content-type"] = "${contentType}"\n`,
);
// The peers have no signal handler; exiting on SIGINT lets --cpu-prof write its profile.
const exitOnInt = join(work, "exit-on-int.mjs");
writeFileSync(exitOnInt, 'process.on("SIGINT", () => process.exit(0));\n');

const path = "/token.v1.TokenService/GetTokenPrices";
const peer = (...args: string[]) => [
  ...peerFlags,
  "--import",
  exitOnInt,
  "scripts/bench/baseline-server.ts",
  ...args,
];
let serverArgs: string[];
const grpc = kind === "service-grpc" || kind === "grpcjs";
if (kind === "service" || kind === "service-grpc" || kind === "service-proto") {
  serverArgs = [...startFlags, npmStartScript(root)];
} else if (kind === "grpcjs") {
  serverArgs = peer("grpcjs", String(port));
} else if (kind === "plain") {
  serverArgs = peer("plain", String(port));
} else if (kind === "raw") {
  const answer = join(work, "answer.json");
  writeFileSync(answer, await serviceAnswer());
  serverArgs = peer("http", String(port), answer);
} else {
  console.error("usage: profile.ts service|service-proto|plain|raw|service-grpc|grpcjs");
  process.exit(2);
}

const profiles = join(work, "profiles");
const server = spawn(
  "taskset",
  ["-c", "0", process.execPath, "--cpu-prof", `--cpu-prof-dir=${profiles}`, ...serverArgs],
  {
    cwd: root,
    env: { ...process.env, PORT: String(port), HOST: "127.0.0.1", AUTH_MODE: "none" },
    stdio: "ignore",
  },
);
try {
  await waitForPort(port);
  const target = `http://127.0.0.1:${port}${path}`;
  const grpcBody = join(work, "request.grpc");
  writeFileSync(grpcBody, Buffer.alloc(5)); // an empty GetTokenPricesRequest, gRPC-framed
  const load = (duration: number) =>
    grpc
      ? execFileSync(
          "taskset",
          // biome-ignore format: one option per pair
          ["-c", "1", "h2load", "-c4", "-m32", "-D", String(duration), "-d", grpcBody,
            "-H", "content-type: application/grpc", "-H", "te: trailers", target],
          { encoding: "utf8" },
        )
      : execFileSync("taskset", ["-c", "1", "wrk", "-t1", "-c32", `-d${duration}s`, "-s", script, target], {
          encoding: "utf8",
        });
  load(3);
  const measuredFrom = Date.now();
  const out = load(seconds);
  const calls = Number((/(\d+) requests in/.exec(out) ?? /(\d+) succeeded/.exec(out))?.[1]);
  server.kill("SIGINT");
  await new Promise((resolve) => server.once("close", resolve));
  summarize(calls, measuredFrom);
} finally {
  server.kill("SIGKILL");
  rmSync(work, { recursive: true, force: true });
}

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
}

/**
 * Where a sample's code came from: `npm start` runs a bundle, whose file says nothing, so frames
 * in it are looked up in its source map (the source file, or the package for node_modules).
 */
function originalOf(frame: ProfileNode["callFrame"]): { url: string; line: number } {
  const fallback = { url: frame.url, line: frame.lineNumber };
  if (!frame.url.startsWith("file://") || !frame.url.includes("/dist/")) return fallback;
  if (!sourceMaps.has(frame.url)) {
    try {
      sourceMaps.set(
        frame.url,
        new SourceMap(JSON.parse(readFileSync(`${fileURLToPath(frame.url)}.map`, "utf8"))),
      );
    } catch {
      sourceMaps.set(frame.url, undefined);
    }
  }
  const entry = sourceMaps.get(frame.url)?.findEntry(frame.lineNumber, frame.columnNumber);
  if (entry === undefined || !("originalSource" in entry)) return fallback;
  return { url: new URL(entry.originalSource, frame.url).href, line: entry.originalLine };
}

function summarize(calls: number, measuredFrom: number): void {
  const file = readdirSync(profiles).find((f) => f.endsWith(".cpuprofile")) as string;
  const profile = JSON.parse(readFileSync(join(profiles, file), "utf8")) as {
    nodes: ProfileNode[];
    startTime: number;
    samples: number[];
    timeDeltas: number[];
  };
  const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
  // The profile's clock is in µs since an arbitrary origin; its last sample is at the process's end.
  let t = profile.startTime;
  const end = profile.startTime + profile.timeDeltas.reduce((a, b) => a + b, 0);
  const from = end - (Date.now() - measuredFrom) * 1000;
  const byFile = new Map<string, number>();
  const byFunction = new Map<string, number>();
  let busy = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    const delta = profile.timeDeltas[i] as number;
    t += delta;
    if (t < from) continue;
    const frame = (nodes.get(profile.samples[i] as number) as ProfileNode).callFrame;
    if (frame.functionName === "(idle)") continue;
    busy += delta;
    const source = originalOf(frame);
    const where = source.url
      .replace(/.*node_modules\/((@[^/]+\/)?[^/]+).*/, "$1")
      .replace(/^file:\/\//, "")
      .replace(root, "");
    const fileKey = where === "" ? frame.functionName : where;
    byFile.set(fileKey, (byFile.get(fileKey) ?? 0) + delta);
    const fnKey = `${frame.functionName || "(anonymous)"} ${where}:${source.line + 1}`;
    byFunction.set(fnKey, (byFunction.get(fnKey) ?? 0) + delta);
  }
  console.log(`${kind}: ${calls} calls, ${(busy / calls).toFixed(1)} µs of CPU per call\n`);
  const top = (m: Map<string, number>, n: number) => {
    for (const [key, us] of [...m].sort((a, b) => b[1] - a[1]).slice(0, n)) {
      console.log(`${(us / calls).toFixed(2).padStart(7)} µs  ${key}`);
    }
  };
  console.log("by file:");
  top(byFile, 40);
  console.log("\nby function:");
  top(byFunction, 25);
}

async function serviceAnswer(): Promise<Buffer> {
  const servicePort = await freePort();
  const child = spawn(process.execPath, ["src/main.ts"], {
    cwd: root,
    env: { ...process.env, PORT: String(servicePort), HOST: "127.0.0.1", AUTH_MODE: "none" },
    stdio: "ignore",
  });
  try {
    await waitForPort(servicePort);
    const res = await fetch(`http://127.0.0.1:${servicePort}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", "accept-encoding": "identity" },
      body: "{}",
    });
    return Buffer.from(await res.arrayBuffer());
  } finally {
    child.kill("SIGTERM");
  }
}

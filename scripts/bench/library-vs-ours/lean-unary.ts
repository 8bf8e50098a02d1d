/**
 * The lean unary path (src/lean/, LEAN_UNARY=true, the default) against connect-node's own
 * handlers (LEAN_UNARY=false), on `npm start`'s build and flags: two services started side by side
 * on core 0, each loaded in turn from this process on core 1 (A, B, A, B, …, after a warm-up of
 * each), GetTokenPrices without a filter (16 entries), as the unary figures of docs/performance.md.
 * Each turn gives the requests a second and the service's CPU per request (/proc: every thread of
 * its process); the load generator here is Node too and may be the bound on the rate, so the CPU
 * per request is the figure that compares the two paths, and the rate is printed beside it.
 *
 *   node scripts/bench/library-vs-ours/lean-unary.ts [connect-json|grpc ...]
 *   BENCH_ROUNDS=7 BENCH_SECONDS=3 BENCH_CONNECTIONS=32
 *   BENCH_A_SCRIPT=/path/main.js BENCH_B_SCRIPT=/path/main.js   # two builds, the same LEAN_UNARY
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import http from "node:http";
import http2 from "node:http2";
import { fileURLToPath } from "node:url";
import { freePort, waitForPort } from "../../../test/support/ports.ts";
import { npmStartEnv, npmStartFlags, npmStartScript } from "../start-flags.ts";
import { median } from "./alternate.ts";

const root = fileURLToPath(new URL("../../..", import.meta.url));
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const PATH = "/token.v1.TokenService/GetTokenPrices";
const TICKS = Number(execFileSync("getconf", ["CLK_TCK"]).toString().trim());

// This process loads from core 1; the services share core 0.
try {
  execFileSync("taskset", ["-pc", "1", String(process.pid)], { stdio: "ignore" });
} catch {
  console.error("taskset is missing: the load generator shares the services' core");
}

const flags = npmStartFlags(root);
const defaultScript = npmStartScript(root);
const children: ChildProcess[] = [];

async function startService(script: string, env: Record<string, string>) {
  const port = await freePort();
  const child = spawn("taskset", ["-c", "0", process.execPath, ...flags, script], {
    cwd: root,
    env: {
      ...process.env,
      ...npmStartEnv(root),
      PORT: String(port),
      HOST: "127.0.0.1",
      LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? "info",
      AUTH_MODE: "none",
      LOCAL_SOLANA_RPC_PORT: "0",
      ...env,
    },
    stdio: "ignore",
  });
  children.push(child);
  await waitForPort(port, 30_000);
  return { port, pid: child.pid as number };
}

/** CPU ticks of a process so far: user and system, every thread. */
function cpuTicks(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.split(" ") ?? [];
  return Number(fields[11]) + Number(fields[12]);
}

type Loader = (port: number, seconds: number) => Promise<number>;

/** Connect JSON POST over HTTP/1.1 keep-alive, CONNECTIONS requests in flight. */
const connectJson: Loader = (port, seconds) => {
  const agent = new http.Agent({ keepAlive: true, maxSockets: CONNECTIONS });
  const end = Date.now() + seconds * 1000;
  let done = 0;
  const one = (): Promise<void> =>
    new Promise((resolve, reject) => {
      const req = http.request(
        {
          agent,
          port,
          host: "127.0.0.1",
          method: "POST",
          path: PATH,
          headers: { "content-type": "application/json", "content-length": "2" },
        },
        (res) => {
          if (res.statusCode !== 200) reject(new Error(`HTTP ${res.statusCode}`));
          res.on("data", () => {});
          res.on("end", () => resolve());
        },
      );
      req.on("error", reject);
      req.end("{}");
    });
  const worker = async () => {
    while (Date.now() < end) {
      await one();
      done++;
    }
  };
  return Promise.all(Array.from({ length: CONNECTIONS }, worker)).then(() => {
    agent.destroy();
    return done;
  });
};

/** gRPC over h2c: one session, CONNECTIONS streams in flight. */
const grpc: Loader = (port, seconds) => {
  const session = http2.connect(`http://127.0.0.1:${port}`);
  const frame = Buffer.alloc(5); // an empty GetTokenPricesRequest
  const end = Date.now() + seconds * 1000;
  let done = 0;
  const one = (): Promise<void> =>
    new Promise((resolve, reject) => {
      const stream = session.request({
        ":method": "POST",
        ":path": PATH,
        "content-type": "application/grpc",
        te: "trailers",
      });
      stream.on("trailers", (t) => {
        if (t["grpc-status"] !== "0") reject(new Error(`grpc-status ${t["grpc-status"]}`));
      });
      stream.on("data", () => {});
      stream.on("end", () => resolve());
      stream.on("error", reject);
      stream.end(frame);
    });
  const worker = async () => {
    while (Date.now() < end) {
      await one();
      done++;
    }
  };
  return Promise.all(Array.from({ length: CONNECTIONS }, worker)).then(() => {
    session.close();
    return done;
  });
};

async function turn(load: Loader, service: { port: number; pid: number }) {
  const before = cpuTicks(service.pid);
  const started = performance.now();
  const requests = await load(service.port, SECONDS);
  const seconds = (performance.now() - started) / 1000;
  const cpuUs = ((cpuTicks(service.pid) - before) / TICKS) * 1e6;
  return { perSecond: requests / seconds, cpuUsPerRequest: cpuUs / requests };
}

const loaders: Record<string, Loader> = { "connect-json": connectJson, grpc };
const chosen = process.argv.slice(2).length > 0 ? process.argv.slice(2) : Object.keys(loaders);
const [aName, bName] = process.env.BENCH_A_SCRIPT
  ? ["A (BENCH_A_SCRIPT)", "B (BENCH_B_SCRIPT)"]
  : ["lean on", "lean off"];
try {
  const a = await startService(process.env.BENCH_A_SCRIPT ?? defaultScript, { LEAN_UNARY: "true" });
  const b = await startService(process.env.BENCH_B_SCRIPT ?? defaultScript, {
    LEAN_UNARY: process.env.BENCH_A_SCRIPT ? "true" : "false",
  });
  for (const name of chosen) {
    const load = loaders[name];
    if (load === undefined) throw new Error(`no load ${name}: ${Object.keys(loaders).join(", ")}`);
    await load(a.port, 2);
    await load(b.port, 2);
    const rows: { a: Awaited<ReturnType<typeof turn>>; b: Awaited<ReturnType<typeof turn>> }[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      if (round % 2 === 0) {
        const ra = await turn(load, a);
        rows.push({ a: ra, b: await turn(load, b) });
      } else {
        const rb = await turn(load, b);
        rows.push({ a: await turn(load, a), b: rb });
      }
    }
    const show = (values: number[], digits: number) =>
      `${median(values).toFixed(digits)} (${values.map((v) => v.toFixed(digits)).join(", ")})`;
    const cpuRatios = rows.map((r) => r.b.cpuUsPerRequest / r.a.cpuUsPerRequest);
    const rateRatios = rows.map((r) => r.a.perSecond / r.b.perSecond);
    console.log(`${name}, ${ROUNDS} rounds of ${SECONDS} s each, ${CONNECTIONS} in flight`);
    console.log(
      `  ${aName}: µs of service CPU a request ${show(
        rows.map((r) => r.a.cpuUsPerRequest),
        1,
      )}`,
    );
    console.log(
      `  ${bName}: µs of service CPU a request ${show(
        rows.map((r) => r.b.cpuUsPerRequest),
        1,
      )}`,
    );
    console.log(
      `  ${aName}: requests/s ${show(
        rows.map((r) => r.a.perSecond),
        0,
      )}`,
    );
    console.log(
      `  ${bName}: requests/s ${show(
        rows.map((r) => r.b.perSecond),
        0,
      )}`,
    );
    console.log(`  CPU a request, ${bName} ÷ ${aName}: ${show(cpuRatios, 2)}`);
    console.log(`  requests/s, ${aName} ÷ ${bName}: ${show(rateRatios, 2)}`);
  }
} finally {
  for (const child of children) child.kill("SIGTERM");
}

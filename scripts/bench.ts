/**
 * Benchmark: throughput of the service against baselines doing the least possible work for the
 * same bytes, on this machine (server pinned to core 0, load generator to core 1 when `taskset`
 * exists). Prints figures; asserts nothing. Needs `wrk` and `h2load` (Debian: wrk, nghttp2-client).
 *
 *   npm run bench                      (BENCH_SECONDS=5 per scenario by default)
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import * as http2 from "node:http2";
import * as net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { create, toBinary } from "@bufbuild/protobuf";
import { GetTokenPricesRequestSchema } from "../gen/token/v1/token_pb.ts";

const seconds = Number(process.env.BENCH_SECONDS ?? 5);
const root = new URL("..", import.meta.url).pathname;
const work = mkdtempSync(join(tmpdir(), "bench-"));
const children: ChildProcess[] = [];
const has = (tool: string) => {
  try {
    execFileSync("sh", ["-c", `command -v ${tool}`], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
};
const pinned = (core: number, argv: string[]) =>
  has("taskset") ? ["taskset", "-c", String(core), ...argv] : argv;

for (const tool of ["wrk", "h2load"]) {
  if (!has(tool)) {
    console.error(`${tool} is missing: apt-get install wrk nghttp2-client`);
    process.exit(2);
  }
}

const JSON_BODY = JSON.stringify({ symbol: "SOL" });
const message = toBinary(GetTokenPricesRequestSchema, create(GetTokenPricesRequestSchema, { symbol: "SOL" }));
const grpcFrame = Buffer.alloc(5 + message.length);
grpcFrame.writeUInt32BE(message.length, 1);
grpcFrame.set(message, 5);
writeFileSync(join(work, "request.json"), JSON_BODY);
writeFileSync(join(work, "request.grpc"), grpcFrame);
writeFileSync(
  join(work, "post.lua"),
  `wrk.method = "POST"\nwrk.body = '${JSON_BODY}'\nwrk.headers["content-type"] = "application/json"\n`,
);

try {
  const service = await start(["node", "src/main.ts"], { LOG_LEVEL: "info" });
  const url = `http://127.0.0.1:${service.port}`;
  const prices = `${url}/token.v1.TokenService/GetTokenPrices`;
  const getUrl = `${url}/token.v1.TokenService/GetTokenPrices?encoding=json&message=${encodeURIComponent(JSON_BODY)}`;

  // Baselines answer exactly the bytes the service answers.
  const jsonAnswer = Buffer.from(
    await (
      await fetch(prices, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON_BODY,
      })
    ).arrayBuffer(),
  );
  writeFileSync(join(work, "answer.json"), jsonAnswer);
  writeFileSync(join(work, "answer.grpc"), await grpcAnswer(url));
  const httpBase = await start([
    "node",
    "scripts/bench/baseline-server.ts",
    "http",
    "PORT",
    join(work, "answer.json"),
  ]);
  const h2Base = await start([
    "node",
    "scripts/bench/baseline-server.ts",
    "http2",
    "PORT",
    join(work, "answer.grpc"),
  ]);
  const grpcJs = await start(["node", "scripts/bench/baseline-server.ts", "grpcjs", "PORT"]);
  const grpcHeaders = ["-H", "content-type: application/grpc", "-H", "te: trailers"];
  const grpcPath = "/token.v1.TokenService/GetTokenPrices";

  const rows: [string, number, string][] = [];
  const add = (name: string, rps: number, baseline?: number) =>
    rows.push([name, rps, baseline === undefined ? "" : `${(rps / baseline).toFixed(2)}x`]);

  const h1Base = wrk(`http://127.0.0.1:${httpBase.port}/`, true);
  add("baseline node:http, same JSON bytes (HTTP/1.1)", h1Base);
  add("Connect JSON POST (HTTP/1.1)", wrk(prices, true), h1Base);
  add("Connect JSON GET (HTTP/1.1)", wrk(getUrl, false), h1Base);
  const h2BaseRps = h2load(`http://127.0.0.1:${h2Base.port}${grpcPath}`, grpcHeaders);
  add("baseline node:http2, same gRPC bytes", h2BaseRps);
  const grpcJsRps = h2load(`http://127.0.0.1:${grpcJs.port}${grpcPath}`, grpcHeaders);
  add("baseline @grpc/grpc-js server, same call", grpcJsRps);
  const grpcRps = h2load(`${url}${grpcPath}`, grpcHeaders);
  add("gRPC (h2c) vs node:http2", grpcRps, h2BaseRps);
  rows.push(["gRPC (h2c) vs grpc-js", grpcRps, `${(grpcRps / grpcJsRps).toFixed(2)}x`]);
  add(
    "Connect JSON POST (h2c)",
    h2load(prices, ["-H", "content-type: application/json"], join(work, "request.json")),
    h2BaseRps,
  );

  console.log(`\n${seconds}s per scenario, server on core 0, load on core 1\n`);
  console.log(`${"scenario".padEnd(52)} ${"req/s".padStart(10)}  vs baseline`);
  for (const [name, rps, ratio] of rows)
    console.log(`${name.padEnd(52)} ${rps.toFixed(0).padStart(10)}  ${ratio}`);
} finally {
  for (const child of children) child.kill("SIGTERM");
  rmSync(work, { recursive: true, force: true });
}

function wrk(target: string, post: boolean): number {
  const args = ["-t1", "-c32", `-d${seconds}s`, ...(post ? ["-s", join(work, "post.lua")] : []), target];
  const out = execFileSync(pinned(1, ["wrk"])[0] as string, [...pinned(1, ["wrk"]).slice(1), ...args], {
    encoding: "utf8",
  });
  return Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? Number.NaN);
}

function h2load(target: string, headers: string[], body = join(work, "request.grpc")): number {
  const args = ["-c4", "-m32", "-D", String(seconds), "-d", body, ...headers, target];
  const argv = pinned(1, ["h2load", ...args]);
  const out = execFileSync(argv[0] as string, argv.slice(1), { encoding: "utf8" });
  const failed = Number(/(\d+) failed/.exec(out)?.[1] ?? 0);
  if (failed > 0) console.warn(`h2load: ${failed} failed requests against ${target}`);
  return Number(/finished in [\d.]+\w+, ([\d.]+) req\/s/.exec(out)?.[1] ?? Number.NaN);
}

async function start(argv: string[], env: Record<string, string> = {}): Promise<{ port: number }> {
  const port = await freePort();
  const args = argv.map((a) => (a === "PORT" ? String(port) : a));
  const command = pinned(0, [args[0] === "node" ? process.execPath : (args[0] as string), ...args.slice(1)]);
  const child = spawn(command[0] as string, command.slice(1), {
    cwd: root,
    env: { ...process.env, PORT: String(port), HOST: "127.0.0.1", ...env },
    stdio: "ignore",
  });
  children.push(child);
  const deadline = Date.now() + 15_000;
  while (Date.now() < deadline) {
    if (await canConnect(port)) return { port };
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${argv.join(" ")} did not start`);
}

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = net.createServer().listen(0, "127.0.0.1", () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, "127.0.0.1");
    socket.once("connect", () => resolve(socket.destroy() !== undefined));
    socket.once("error", () => resolve(false));
  });
}

function grpcAnswer(url: string): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(url);
    const stream = session.request({
      ":method": "POST",
      ":path": "/token.v1.TokenService/GetTokenPrices",
      "content-type": "application/grpc",
      te: "trailers",
    });
    const chunks: Buffer[] = [];
    stream.on("data", (c: Buffer) => chunks.push(c));
    stream.on("end", () => {
      session.close();
      resolve(Buffer.concat(chunks));
    });
    stream.on("error", reject);
    stream.end(grpcFrame);
  });
}

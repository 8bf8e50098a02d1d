/**
 * A short, seeded fuzz over every RPC of the contract (webhooks included) and every protocol, through raw HTTP/1.1
 * and HTTP/2 requests (so malformed frames, bodies and headers get through, as a hostile client
 * would send them). It fails on any 5xx or gRPC INTERNAL/UNKNOWN, on any answer over a size bound,
 * on a call left unanswered, and on heap growth after a forced garbage collection. The 5xx
 * statuses the Connect protocol itself assigns to a client's request (501 unimplemented for an
 * unsupported encoding, 504 deadline_exceeded for an expired deadline) are its specified answers,
 * not server failures, and pass; 500 (internal) and everything else in 5xx fail.
 * FUZZ_SEED reproduces a run; the seed is printed. FUZZ_COUNT changes the number of requests.
 */
import * as http from "node:http";
import * as http2 from "node:http2";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import {
  create,
  type DescField,
  type DescMessage,
  type DescMethod,
  fromJson,
  toBinary,
} from "@bufbuild/protobuf";
import { afterAll, beforeAll, expect, it } from "vitest";
import { AgentService } from "../gen/agent/v1/agent_pb.ts";
import { TokenService } from "../gen/token/v1/token_pb.ts";
import { WebhookService } from "../gen/webhook/v1/webhook_pb.ts";
import { grpcFrame as frame } from "./support/grpc-frame.ts";
import { prng } from "./support/prng.ts";
import { type RunningServer, startServer } from "./support/start-server.ts";

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;

const SEED = Number(process.env.FUZZ_SEED ?? Math.floor(Math.random() * 2 ** 31));
const COUNT = Number(process.env.FUZZ_COUNT ?? 3000);
/** Largest answer allowed: a full page of transactions fits, an echo of a huge input does not. */
const MAX_SUCCESS_BYTES = 64 * 1024;
const MAX_ERROR_BYTES = 8 * 1024;
const MAX_HEAP_GROWTH_BYTES = 32 * 1024 * 1024;
/** Connect's HTTP statuses for unimplemented and deadline_exceeded (see the file comment). */
const PROTOCOL_5XX = new Set([501, 504]);

const METHODS: DescMethod[] = [...TokenService.methods, ...AgentService.methods, ...WebhookService.methods];
/** Paths of server streams, which answer with a first message and then stay open. */
const STREAMING_PATHS = new Set(
  METHODS.filter((m) => m.methodKind === "server_streaming").map((m) => `/${m.parent.typeName}/${m.name}`),
);

type Rng = ReturnType<typeof prng>;

function randomString(rng: Rng): string {
  switch (rng.int(8)) {
    case 6:
      // Characters beyond the BMP (two UTF-16 units each), starting where messages that quote a
      // prefix tend to cut it (V8's JSON.parse quotes 10 units, protobuf-es 30, this service 40).
      return `${"a".repeat(rng.pick([0, 1, 6, 7, 28, 29, 38, 39, rng.int(45)]))}${"😀".repeat(rng.pick([1, 30, 40_000]))}`;
    case 7:
      // Lone surrogates: JSON carries them as escapes; they must never break an error's encoding.
      return rng.pick(["\ud800", "x\udfff", `${"b".repeat(39)}\ud83d`, "\udc00\ud800"]);
    case 0:
      return "";
    case 1:
      return "x".repeat(rng.pick([10, 1000, 70_000, 300_000]));
    case 2:
      return "So11111111111111111111111111111111111111112";
    case 3:
      return String.fromCharCode(...Array.from({ length: 20 }, () => rng.int(0x3000)));
    case 4:
      return rng.pick(["transfer", "swap", "active", "pending", "failed", "sol", "USDC", "__proto__"]);
    default:
      return Math.random().toString(36).slice(2);
  }
}

function randomJson(rng: Rng, depth = 0): unknown {
  switch (rng.int(depth > 2 ? 4 : 7)) {
    case 0:
      return randomString(rng);
    case 1:
      return rng.pick([0, -1, 1, 2 ** 31, 2 ** 53, 1e308, -1e308, 5e-324, 0.5, 100, 101]);
    case 2:
      return rng.pick([true, false, null]);
    case 3:
      return rng.pick(["NaN", "Infinity", "-0", "1e9999"]);
    case 4:
      return Array.from({ length: rng.int(5) }, () => randomJson(rng, depth + 1));
    default: {
      const object: Record<string, unknown> = {};
      for (let i = rng.int(6); i > 0; i--)
        object[randomString(rng).slice(0, 30)] = randomJson(rng, depth + 1);
      return object;
    }
  }
}

/** A request object for `message`: each field omitted, plausible, or of a wrong type. */
function randomRequest(rng: Rng, message: DescMessage): Record<string, unknown> {
  const request: Record<string, unknown> = {};
  for (const field of message.fields as DescField[]) {
    const roll = rng.int(4);
    if (roll === 0) continue;
    if (roll === 1) request[field.jsonName] = randomJson(rng);
    else if (field.fieldKind === "scalar" && field.scalar === 9) request[field.jsonName] = randomString(rng);
    else if (field.fieldKind === "scalar")
      request[field.jsonName] = rng.pick([0, 1, 10, 100, 101, -5, 2 ** 31]);
    else request[field.jsonName] = randomJson(rng);
  }
  if (rng.int(8) === 0) request[randomString(rng).slice(0, 20)] = randomJson(rng);
  return request;
}

function randomBytes(rng: Rng): Buffer {
  return Buffer.from(Array.from({ length: rng.int(64) }, () => rng.int(256)));
}

/** The request's protobuf bytes when it converts, else random bytes. */
function binaryOf(rng: Rng, method: DescMethod, request: Record<string, unknown>): Buffer {
  try {
    return Buffer.from(
      toBinary(method.input, fromJson(method.input, request as never, { ignoreUnknownFields: true })),
    );
  } catch {
    return rng.int(2) === 0 ? randomBytes(rng) : Buffer.from(toBinary(method.input, create(method.input)));
  }
}

/** A header value Node's client will send: printable ASCII only. */
function headerSafe(value: string): string {
  return value.replace(/[^\x20-\x7e]/g, "?");
}

interface Answer {
  status: number;
  grpcStatus?: string;
  bytes: number;
}

let server: RunningServer;
let h2: http2.ClientHttp2Session;
const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });

beforeAll(async () => {
  server = await startServer({ env: { LOG_LEVEL: "silent" } });
  h2 = http2.connect(server.baseUrl);
});
afterAll(async () => {
  h2.close();
  agent.destroy();
  await server.close();
});

/**
 * Longest wait for an answer. Every fuzzed call is quick, so a call unanswered for this long was
 * left open by the server (a response that threw half-way, say): a failure, named as such.
 */
const ANSWER_TIMEOUT_MS = 10_000;
const NO_ANSWER = -1;

function h1(method: string, path: string, headers: Record<string, string>, body?: Buffer): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${server.baseUrl}${path}`, { method, headers, agent }, (res) => {
      let bytes = 0;
      let grpcStatus = res.headers["grpc-status"] as string | undefined;
      res.on("data", (chunk: Buffer) => {
        bytes += chunk.length;
        const text = chunk.toString("latin1");
        const match = /grpc-status:\s*(\d+)/.exec(text);
        if (match !== null) grpcStatus = match[1];
        // A server stream that began is an answer: its first message came; it would go on for good.
        if (STREAMING_PATHS.has(path) && res.statusCode === 200) {
          resolve({ status: res.statusCode, bytes, ...(grpcStatus === undefined ? {} : { grpcStatus }) });
          req.destroy();
        }
      });
      res.on("end", () =>
        resolve({ status: res.statusCode ?? 0, bytes, ...(grpcStatus === undefined ? {} : { grpcStatus }) }),
      );
      res.on("error", reject);
    });
    req.on("error", () => resolve({ status: 0, bytes: 0 })); // the server may cut a hostile request
    req.setTimeout(ANSWER_TIMEOUT_MS, () => {
      resolve({ status: NO_ANSWER, bytes: 0 });
      req.destroy();
    });
    req.end(body);
  });
}

function overH2(path: string, headers: Record<string, string>, body: Buffer): Promise<Answer> {
  return new Promise((resolve) => {
    const stream = h2.request({ ":method": "POST", ":path": path, ...headers });
    let status = 0;
    let bytes = 0;
    let grpcStatus: string | undefined;
    stream.on("response", (h) => {
      status = Number(h[":status"]);
      if (h["grpc-status"] !== undefined) grpcStatus = String(h["grpc-status"]);
    });
    stream.on("trailers", (t) => {
      grpcStatus = String(t["grpc-status"]);
    });
    stream.on("data", (chunk: Buffer) => {
      bytes += chunk.length;
      // A server stream that began is an answer: its first message came; it would go on for good.
      if (STREAMING_PATHS.has(path)) stream.close(http2.constants.NGHTTP2_CANCEL);
    });
    stream.on("close", () => resolve({ status, bytes, ...(grpcStatus === undefined ? {} : { grpcStatus }) }));
    stream.on("error", () => {});
    stream.setTimeout(ANSWER_TIMEOUT_MS, () => {
      status = NO_ANSWER;
      stream.close(http2.constants.NGHTTP2_CANCEL);
    });
    stream.end(body);
  });
}

/** One fuzzed request; returns a description of what went wrong, or undefined. */
async function fuzzOnce(rng: Rng): Promise<string | undefined> {
  const method = rng.pick(METHODS);
  const path = `/${method.parent.typeName}/${method.name}`;
  const request = randomRequest(rng, method.input);
  const json = Buffer.from(rng.int(10) === 0 ? randomString(rng) : JSON.stringify(request));
  const binary = rng.int(6) === 0 ? randomBytes(rng) : binaryOf(rng, method, request);
  const truncate = (b: Buffer) => (rng.int(8) === 0 ? b.subarray(0, rng.int(b.length + 1)) : b);
  const extraHeaders: Record<string, string> = {};
  if (rng.int(10) === 0)
    extraHeaders["connect-timeout-ms"] = rng.pick(["0", "1", "-1", "abc", "99999999999"]);
  if (rng.int(10) === 0) extraHeaders["grpc-timeout"] = rng.pick(["1m", "99999999H", "x", "0S"]);
  if (rng.int(12) === 0) extraHeaders["content-encoding"] = rng.pick(["gzip", "br", "zstd"]);
  if (rng.int(12) === 0) extraHeaders["grpc-encoding"] = rng.pick(["gzip", "snappy"]);
  if (rng.int(12) === 0) extraHeaders["idempotency-key"] = headerSafe(randomString(rng).slice(0, 400));
  const protocol = rng.int(7);
  const compressedFlag = rng.int(10) === 0 ? 1 : 0;
  let answer: Answer;
  let label: string;
  switch (protocol) {
    case 0:
      label = "connect+json h1";
      answer = await h1(
        "POST",
        path,
        {
          "content-type": rng.pick(["application/json", "text/plain", "application/json; charset=latin1"]),
          ...extraHeaders,
        },
        truncate(json),
      );
      break;
    case 1:
      label = "connect+proto h1";
      answer = await h1(
        "POST",
        path,
        { "content-type": "application/proto", ...extraHeaders },
        truncate(binary),
      );
      break;
    case 2: {
      label = "connect GET";
      const encoding = rng.pick(["json", "proto", "xml"]);
      const message =
        encoding === "proto"
          ? binary.toString("base64url")
          : encodeURIComponent(json.toString("utf8").slice(0, 4000).toWellFormed());
      const extra = rng.int(4) === 0 ? `&compression=${rng.pick(["gzip", "identity", "lz4"])}` : "";
      answer = await h1("GET", `${path}?encoding=${encoding}&message=${message}${extra}`, extraHeaders);
      break;
    }
    case 3:
      label = "grpc h2";
      answer = await overH2(
        path,
        {
          "content-type": rng.pick(["application/grpc", "application/grpc+json"]),
          te: "trailers",
          ...extraHeaders,
        },
        truncate(frame(rng.int(2) === 0 ? binary : json, compressedFlag)),
      );
      break;
    case 4:
      label = "grpc-web h1";
      answer = await h1(
        "POST",
        path,
        {
          "content-type": rng.pick([
            "application/grpc-web+proto",
            "application/grpc-web+json",
            "application/grpc-web-text",
          ]),
          ...extraHeaders,
        },
        truncate(frame(binary)),
      );
      break;
    case 5:
      label = "connect+json h2";
      answer = await overH2(path, { "content-type": "application/json", ...extraHeaders }, truncate(json));
      break;
    default:
      label = "garbage h1";
      answer = await h1(
        rng.pick(["POST", "PUT", "DELETE", "PATCH"]),
        rng.int(2) === 0 ? path : `${path}/${randomString(rng).slice(0, 50)}`,
        { "content-type": headerSafe(randomString(rng).slice(0, 40)) || "x/y" },
        randomBytes(rng),
      );
  }
  const what = `${label} ${path} ${JSON.stringify(extraHeaders)}`;
  if (answer.status === NO_ANSWER) return `${what}: no answer within ${ANSWER_TIMEOUT_MS} ms`;
  if (answer.status >= 500 && !PROTOCOL_5XX.has(answer.status)) return `${what}: HTTP ${answer.status}`;
  // A compressed frame without grpc-encoding is INTERNAL by the gRPC spec (the conformance suite
  // checks it); any other INTERNAL or UNKNOWN is a failure.
  const prescribedInternal =
    protocol === 3 && compressedFlag === 1 && extraHeaders["grpc-encoding"] === undefined;
  if ((answer.grpcStatus === "13" && !prescribedInternal) || answer.grpcStatus === "2") {
    return `${what}: grpc-status ${answer.grpcStatus}`;
  }
  const ok = answer.status === 200 && (answer.grpcStatus === undefined || answer.grpcStatus === "0");
  if (answer.bytes > (ok ? MAX_SUCCESS_BYTES : MAX_ERROR_BYTES))
    return `${what}: ${answer.bytes} bytes answered`;
  return undefined;
}

it(`survives ${COUNT} fuzzed requests over every RPC and protocol (seed printed)`, async () => {
  console.log(`fuzz seed ${SEED} (FUZZ_SEED=${SEED} reproduces this run)`);
  const rng = prng(SEED);
  const failures: string[] = [];
  const run = async (count: number) => {
    for (let i = 0; i < count; i += 8) {
      const results = await Promise.all(Array.from({ length: Math.min(8, count - i) }, () => fuzzOnce(rng)));
      for (const failure of results) if (failure !== undefined) failures.push(failure);
    }
  };
  await run(200); // warm up: caches, pools, JIT
  const heapAfterGc = () => {
    gc();
    gc();
    return process.memoryUsage().heapUsed;
  };
  const before = heapAfterGc();
  await run(COUNT);
  await new Promise((resolve) => setTimeout(resolve, 200));
  const growth = heapAfterGc() - before;
  console.log(
    `fuzz: ${COUNT} requests, ${failures.length} failures, heap growth ${(growth / 1e6).toFixed(1)} MB`,
  );
  expect(failures.slice(0, 20)).toEqual([]);
  expect(growth).toBeLessThan(MAX_HEAP_GROWTH_BYTES);
}, 120_000);

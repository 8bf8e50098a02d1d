/**
 * The lean unary path (src/lean/) answers exactly as connect-node's handlers do. Two servers run
 * side by side, one with the lean path (the default) and one with LEAN_UNARY=false, and the same
 * raw requests go to both: every unary protocol and codec, HTTP/1.1 and h2c, successes, service
 * errors with details, undecodable and oversized bodies, compression both ways, deadlines and
 * broken gRPC framing. Status, headers, body bytes and trailers must be the same.
 */
import * as http from "node:http";
import * as http2 from "node:http2";
import { gzipSync } from "node:zlib";
import { create, type DescMessage, type MessageInitShape, toBinary, toJsonString } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CreateAgentRequestSchema, GetAgentRequestSchema } from "../gen/agent/v1/agent_pb.ts";
import { GetTokenMetadataRequestSchema, GetTokenPricesRequestSchema } from "../gen/token/v1/token_pb.ts";
import { loadCatalog } from "../src/token/catalog.ts";
import { createCatalogPriceSource } from "../src/token/catalog-price-source.ts";
import { grpcFrame as envelope } from "./support/grpc-frame.ts";
import { type RunningServer, startServer } from "./support/start-server.ts";

const MAX_REQUEST_BYTES = 4096;

interface Exchange {
  status: number;
  headers: Record<string, string>;
  body: string;
  trailers: Record<string, string>;
}

interface RawRequest {
  method: "POST" | "GET";
  path: string;
  headers: Record<string, string>;
  body?: Buffer;
}

/** Headers that differ between any two answers, or with the framing (chunked or not). */
const UNSTABLE = new Set(["date", "connection", "keep-alive", "transfer-encoding", "content-length"]);

let lean: RunningServer;
let connect: RunningServer;
const sessions: http2.ClientHttp2Session[] = [];
beforeAll(async () => {
  const env = { MAX_REQUEST_BYTES: String(MAX_REQUEST_BYTES) };
  // The catalog's snapshot on both: the embedded chain's pool prices carry the time and slot each
  // server read its own chain at, and the answers are compared byte for byte.
  const overrides = { prices: createCatalogPriceSource({ catalog: loadCatalog() }) };
  [lean, connect] = await Promise.all([
    startServer({ env, overrides }),
    startServer({ env: { ...env, LEAN_UNARY: "false" }, overrides }),
  ]);
});
afterAll(async () => {
  for (const session of sessions) session.close();
  await Promise.all([lean?.close(), connect?.close()]);
});

function stable(headers: Record<string, string | string[] | number | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(headers)) {
    if (key.startsWith(":") || UNSTABLE.has(key) || value === undefined) continue;
    out[key] = String(value);
  }
  return out;
}

function overHttp1(server: RunningServer, req: RawRequest): Promise<Exchange> {
  return new Promise((resolve, reject) => {
    const request = http.request(
      {
        host: "127.0.0.1",
        port: server.port,
        method: req.method,
        path: req.path,
        headers: req.headers,
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("end", () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: stable(res.headers),
            body: Buffer.concat(chunks).toString("base64"),
            trailers: stable(res.trailers),
          }),
        );
        res.on("error", reject);
      },
    );
    request.on("error", reject);
    request.end(req.body);
  });
}

function overHttp2(server: RunningServer, req: RawRequest): Promise<Exchange> {
  const session = http2.connect(server.baseUrl);
  sessions.push(session);
  return new Promise((resolve, reject) => {
    const stream = session.request({ ":method": req.method, ":path": req.path, ...req.headers });
    let status = 0;
    let headers: Record<string, string> = {};
    let trailers: Record<string, string> = {};
    const chunks: Buffer[] = [];
    stream.on("response", (h) => {
      status = Number(h[":status"]);
      headers = stable(h);
    });
    stream.on("trailers", (t) => {
      trailers = stable(t);
    });
    stream.on("data", (chunk: Buffer) => chunks.push(chunk));
    stream.on("end", () => {
      session.close();
      resolve({ status, headers, body: Buffer.concat(chunks).toString("base64"), trailers });
    });
    stream.on("error", reject);
    stream.end(req.body);
  });
}

type Format =
  | "connect+json"
  | "connect+proto"
  | "grpc+proto"
  | "grpc+json"
  | "grpc-web+proto"
  | "grpc-web+json";

const CONTENT_TYPE: Record<Format, string> = {
  "connect+json": "application/json",
  "connect+proto": "application/proto",
  "grpc+proto": "application/grpc",
  "grpc+json": "application/grpc+json",
  "grpc-web+proto": "application/grpc-web+proto",
  "grpc-web+json": "application/grpc-web+json",
};

/** A POST of `payload` (the message's bytes in the format's codec), framed as the format wants. */
function post(path: string, format: Format, payload: Buffer, extra: Record<string, string> = {}): RawRequest {
  const enveloped = format.startsWith("grpc");
  return {
    method: "POST",
    path,
    headers: { "content-type": CONTENT_TYPE[format], "x-request-id": "lean-diff", ...extra },
    body: enveloped ? envelope(payload) : payload,
  };
}

function encode<T extends DescMessage>(schema: T, init: MessageInitShape<T>, format: Format): Buffer {
  const message = create(schema, init);
  return format.endsWith("json")
    ? Buffer.from(toJsonString(schema, message))
    : Buffer.from(toBinary(schema, message));
}

const CALLS = [
  {
    name: "GetTokenPrices, all",
    path: "/token.v1.TokenService/GetTokenPrices",
    schema: GetTokenPricesRequestSchema,
    init: {},
  },
  {
    name: "GetTokenPrices, one symbol",
    path: "/token.v1.TokenService/GetTokenPrices",
    schema: GetTokenPricesRequestSchema,
    init: { symbol: "SOL" },
  },
  {
    name: "GetTokenMetadata, invalid mint (invalid_argument with details)",
    path: "/token.v1.TokenService/GetTokenMetadata",
    schema: GetTokenMetadataRequestSchema,
    init: { mint: "not-a-mint" },
  },
  {
    name: "GetAgent, unknown id (not_found)",
    path: "/agent.v1.AgentService/GetAgent",
    schema: GetAgentRequestSchema,
    init: { agentId: "R94SZ3yeKJkHTAlzkxFh2A" },
  },
  {
    name: "CreateAgent, unknown type (invalid_argument)",
    path: "/agent.v1.AgentService/CreateAgent",
    schema: CreateAgentRequestSchema,
    init: { type: "bogus" },
  },
] as const;

const FORMATS = Object.keys(CONTENT_TYPE) as Format[];
const TRANSPORTS = { "HTTP/1.1": overHttp1, h2c: overHttp2 } as const;

/** Every case over every transport that can carry it (gRPC needs HTTP/2). */
const cases: [string, keyof typeof TRANSPORTS, RawRequest][] = [];
function add(name: string, format: Format | "connect GET", req: RawRequest) {
  for (const transport of Object.keys(TRANSPORTS) as (keyof typeof TRANSPORTS)[]) {
    if (format.startsWith("grpc+") && transport === "HTTP/1.1") continue;
    cases.push([`${name}, ${format}`, transport, req]);
  }
}

for (const call of CALLS) {
  for (const format of FORMATS)
    add(call.name, format, post(call.path, format, encode(call.schema, call.init, format)));
}
const pricesPath = "/token.v1.TokenService/GetTokenPrices";
const symbolSol = { symbol: "SOL" };
add("GET, JSON", "connect GET", {
  method: "GET",
  path: `${pricesPath}?encoding=json&message=${encodeURIComponent(JSON.stringify(symbolSol))}`,
  headers: { "x-request-id": "lean-diff" },
});
add("GET, proto in base64", "connect GET", {
  method: "GET",
  path: `${pricesPath}?encoding=proto&base64=1&message=${Buffer.from(toBinary(GetTokenPricesRequestSchema, create(GetTokenPricesRequestSchema, symbolSol))).toString("base64url")}`,
  headers: { "x-request-id": "lean-diff" },
});
add("GET, undecodable JSON", "connect GET", {
  method: "GET",
  path: `${pricesPath}?encoding=json&message=%7Bnope`,
  headers: { "x-request-id": "lean-diff" },
});
add("GET, gzip answer", "connect GET", {
  method: "GET",
  path: `${pricesPath}?encoding=json&message=%7B%7D`,
  headers: { "x-request-id": "lean-diff", "accept-encoding": "gzip" },
});
for (const format of FORMATS) {
  const json = format.endsWith("json");
  add(
    "undecodable",
    format,
    post(pricesPath, format, json ? Buffer.from('{"symbol": 12') : Buffer.from([0x0f, 0xff, 0xff])),
  );
  add(
    "over MAX_REQUEST_BYTES",
    format,
    post(
      pricesPath,
      format,
      encode(GetTokenPricesRequestSchema, { symbol: "S".repeat(MAX_REQUEST_BYTES) }, format),
    ),
  );
  add(
    "deadline already passed",
    format,
    post(
      pricesPath,
      format,
      encode(GetTokenPricesRequestSchema, {}, format),
      format.startsWith("connect") ? { "connect-timeout-ms": "0" } : { "grpc-timeout": "0m" },
    ),
  );
  add(
    "answer compressed for a caller that accepts gzip",
    format,
    post(
      pricesPath,
      format,
      encode(GetTokenPricesRequestSchema, {}, format),
      format.startsWith("connect") ? { "accept-encoding": "gzip" } : { "grpc-accept-encoding": "gzip" },
    ),
  );
  const payload = encode(GetTokenPricesRequestSchema, symbolSol, format);
  if (format.startsWith("connect")) {
    add("gzip request", format, {
      ...post(pricesPath, format, gzipSync(payload), { "content-encoding": "gzip" }),
    });
    add(
      "truncated gzip request",
      format,
      post(pricesPath, format, gzipSync(payload).subarray(0, 12), { "content-encoding": "gzip" }),
    );
  } else {
    const base = post(pricesPath, format, payload, { "grpc-encoding": "gzip" });
    add("gzip request", format, { ...base, body: envelope(gzipSync(payload), 1) });
    add("compressed message without grpc-encoding", format, {
      ...base,
      headers: post(pricesPath, format, payload).headers,
      body: envelope(gzipSync(payload), 1),
    });
    add("no message", format, { ...base, body: Buffer.alloc(0) });
    add("two messages", format, {
      ...base,
      headers: post(pricesPath, format, payload).headers,
      body: Buffer.concat([envelope(payload), envelope(payload)]),
    });
    add("incomplete envelope", format, {
      ...base,
      headers: post(pricesPath, format, payload).headers,
      body: envelope(payload).subarray(0, 7),
    });
  }
}

describe("the lean unary path answers as connect-node does", () => {
  it.each(cases)("%s over %s", async (_name, transport, req) => {
    const send = TRANSPORTS[transport];
    const [fromLean, fromConnect] = await Promise.all([send(lean, req), send(connect, req)]);
    expect(fromLean).toEqual(fromConnect);
  });

  it("is the path that served them: gRPC-Web over HTTP/1.1 comes with a length, not chunked", async () => {
    const req = post(pricesPath, "grpc-web+proto", encode(GetTokenPricesRequestSchema, {}, "grpc-web+proto"));
    const framing = (server: RunningServer) =>
      new Promise<string | undefined>((resolve, reject) => {
        http
          .request(
            { port: server.port, method: "POST", path: req.path, headers: req.headers, agent: false },
            (res) => {
              res.resume();
              resolve(res.headers["transfer-encoding"] ?? `length ${res.headers["content-length"]}`);
            },
          )
          .on("error", reject)
          .end(req.body);
      });
    expect(await framing(connect)).toBe("chunked");
    expect(await framing(lean)).toMatch(/^length \d+$/);
  });

  it("logs every call the same way as connect-node's path", () => {
    // Both paths log every call they run through the interceptors, with the same fields.
    const calls = (server: RunningServer) =>
      server.logs
        .filter((line) => line.msg === "rpc")
        .map((line) => `${line.procedure} ${line.protocol} ${line.code} ${line.request_id}`)
        .sort();
    expect(calls(lean).length).toBeGreaterThan(cases.length / 2);
    expect(calls(lean)).toEqual(calls(connect));
  });
});

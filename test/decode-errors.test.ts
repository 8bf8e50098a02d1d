/**
 * Input the server cannot decode is the caller's mistake, on every protocol: invalid_argument
 * (HTTP 400 for Connect), never internal; and every request turned away before the service (decode
 * errors, unknown routes, unsupported content types) is counted in the metrics.
 */
import * as http from "node:http";
import * as http2 from "node:http2";
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { grpcFrame as frame } from "./support/grpc-frame.ts";
import { type RunningServer, startServer } from "./support/start-server.ts";

const PRICES = "/token.v1.TokenService/GetTokenPrices";
/** A field with wire type 7, which does not exist: no protobuf decoder accepts it. */
const GARBAGE = Buffer.from([0x0f, 0xff, 0xff, 0xff]);

let server: RunningServer;
beforeAll(async () => {
  server = await startServer();
});
afterAll(() => server.close());

async function counter(series: string): Promise<number> {
  const text = await (await fetch(`${server.baseUrl}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith(`${series} `));
  return line === undefined ? 0 : Number(line.split(" ")[1]);
}

function grpcCall(body: Buffer, headers: Record<string, string> = {}, path = PRICES) {
  const client = http2.connect(server.baseUrl);
  return new Promise<{ status?: string; message?: string }>((resolve, reject) => {
    const stream = client.request({
      ":method": "POST",
      ":path": path,
      "content-type": "application/grpc",
      te: "trailers",
      ...headers,
    });
    const result: { status?: string; message?: string } = {};
    stream.on("response", (h) => {
      if (h["grpc-status"] !== undefined) result.status = String(h["grpc-status"]);
    });
    stream.on("trailers", (t) => {
      result.status = String(t["grpc-status"]);
      result.message = decodeURIComponent(String(t["grpc-message"] ?? ""));
    });
    stream.resume();
    stream.on("close", () => {
      client.close();
      resolve(result);
    });
    stream.on("error", reject);
    // A call the server leaves open fails here rather than at the test's timeout.
    stream.setTimeout(5000, () => {
      client.destroy();
      reject(new Error("no answer within 5 s"));
    });
    stream.end(body);
  });
}

function grpcWebCall(
  body: Buffer,
  contentType = "application/grpc-web+proto",
  path = PRICES,
): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      `${server.baseUrl}${path}`,
      { method: "POST", headers: { "content-type": contentType }, timeout: 5000 },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () =>
          resolve(`${res.headers["grpc-status"] ?? ""}|${Buffer.concat(chunks).toString("latin1")}`),
        );
      },
    );
    req.on("error", reject);
    req.on("timeout", () => {
      req.destroy();
      reject(new Error("no answer within 5 s"));
    });
    req.end(body);
  });
}

describe("undecodable input is invalid_argument", () => {
  it("Connect GET with a malformed proto message", async () => {
    const before = await counter('http_rejections_total{reason="decode_error"}');
    const res = await fetch(`${server.baseUrl}${PRICES}?encoding=proto&message=lgduj7la`);
    expect(res.status).toBe(400);
    expect(((await res.json()) as { code: string }).code).toBe("invalid_argument");
    expect(await counter('http_rejections_total{reason="decode_error"}')).toBe(before + 1);
  });

  it("Connect binary POST with bytes that are no message", async () => {
    const res = await fetch(`${server.baseUrl}${PRICES}`, {
      method: "POST",
      headers: { "content-type": "application/proto" },
      body: GARBAGE,
    });
    expect(res.status).toBe(400);
    const error = (await res.json()) as { code: string; message: string };
    expect(error.code).toBe("invalid_argument");
    expect(error.message).toContain("token.v1.GetTokenPricesRequest");
  });

  it("Connect with a truncated gzip body", async () => {
    const gzipped = gzipSync(Buffer.from(JSON.stringify({ symbol: "SOL" })));
    const res = await fetch(`${server.baseUrl}${PRICES}`, {
      method: "POST",
      headers: { "content-type": "application/json", "content-encoding": "gzip" },
      body: gzipped.subarray(0, gzipped.length - 6),
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { code: string }).code).toBe("invalid_argument");
  });

  it("gRPC with a malformed frame payload", async () => {
    const result = await grpcCall(frame(GARBAGE));
    expect(result.status).toBe("3");
    expect(result.message).toContain("could not be decoded");
  });

  it("gRPC with a compressed frame but no grpc-encoding: INTERNAL, as the gRPC spec prescribes", async () => {
    expect((await grpcCall(frame(Buffer.from([1, 2, 3]), 1))).status).toBe("13");
  });

  it("gRPC-Web with a malformed frame payload", async () => {
    const answer = await grpcWebCall(frame(GARBAGE));
    expect(answer).toMatch(/grpc-status: ?3/);
    expect(answer).not.toMatch(/grpc-status: ?13/);
  });

  // connect writes its own message about such input (V8's JSON.parse message quotes a snippet of
  // the body, cut inside a surrogate pair here; protobuf-es quotes a short JSON string holding a
  // lone surrogate escape), and could not percent-encode it into grpc-message: the call hung.
  // "\x12aaaaaa😀😀…": V8 quotes 10 UTF-16 units of it, the last one half of the second emoji.
  const SPLIT_SNIPPET = Buffer.from(`\x12aaaaaa${"😀".repeat(30)}`);
  const LONE_SURROGATE = Buffer.from('{"limit":"\\ud800"}');
  const LIST = "/agent.v1.AgentService/ListAgents";

  it.each([
    ["a JSON body whose parse error would quote half a character", SPLIT_SNIPPET, PRICES],
    ["a lone surrogate in a JSON number field", LONE_SURROGATE, LIST],
  ])("gRPC with %s", async (_name, payload, path) => {
    const before = await counter('http_rejections_total{reason="decode_error"}');
    const result = await grpcCall(frame(payload), { "content-type": "application/grpc+json" }, path);
    expect(result.status).toBe("3");
    expect(await counter('http_rejections_total{reason="decode_error"}')).toBe(before + 1);
  });

  it.each([
    ["a JSON body whose parse error would quote half a character", SPLIT_SNIPPET, PRICES],
    ["a lone surrogate in a JSON number field", LONE_SURROGATE, LIST],
  ])("gRPC-Web with %s", async (_name, payload, path) => {
    const answer = await grpcWebCall(frame(payload), "application/grpc-web+json", path);
    expect(answer).toMatch(/grpc-status: ?3/);
  });

  it("an error the service raises is untouched (a malformed mint stays its own invalid_argument)", async () => {
    const res = await fetch(`${server.baseUrl}${PRICES}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ mint: "nope" }),
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { message: string }).message).toContain("mint");
  });
});

describe("requests turned away before the service are counted", () => {
  it("bodies that are not JSON, or JSON of the wrong shape, on Connect and gRPC", async () => {
    const before = await counter('http_rejections_total{reason="decode_error"}');
    for (const body of ["{", '{"symbol":5}']) {
      const res = await fetch(`${server.baseUrl}${PRICES}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body,
      });
      expect(res.status).toBe(400);
      expect(((await res.json()) as { code: string }).code).toBe("invalid_argument");
    }
    const grpc = await grpcCall(frame(Buffer.from("{")), { "content-type": "application/grpc+json" });
    expect(grpc.status).toBe("3");
    expect(await grpcWebCall(frame(Buffer.from("{")), "application/grpc-web+json")).toMatch(
      /grpc-status: ?3/,
    );
    expect(await counter('http_rejections_total{reason="decode_error"}')).toBe(before + 4);
  });

  it("unknown routes and unsupported content types", async () => {
    const routes = await counter('http_rejections_total{reason="unknown_route"}');
    const media = await counter('http_rejections_total{reason="unsupported_media_type"}');
    expect((await fetch(`${server.baseUrl}/no/such/${"x".repeat(5000)}`)).status).toBe(404);
    const wrongType = await fetch(`${server.baseUrl}${PRICES}`, {
      method: "POST",
      headers: { "content-type": "text/plain" },
      body: "{}",
    });
    expect(wrongType.status).toBe(415);
    // Protocol clients' types get the bare 415 the protocols prescribe.
    const image = await fetch(`${server.baseUrl}${PRICES}`, {
      method: "POST",
      headers: { "content-type": "image/jpeg" },
      body: "{}",
    });
    expect(image.status).toBe(415);
    expect(await image.text()).toBe("");
    // What curl -d sends without -H 'content-type: application/json': the answer says what to send.
    const form = await fetch(`${server.baseUrl}${PRICES}`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: '{"symbol":"sol"}',
    });
    expect(form.status).toBe(415);
    expect(await form.json()).toEqual({
      code: "unknown",
      message: expect.stringMatching(
        /^content-type "application\/x-www-form-urlencoded": a Connect call sends content-type application\/json/,
      ),
    });
    // The root, as a browser or curl opens it first, points at the reference.
    const root = await fetch(`${server.baseUrl}/`);
    expect(root.status).toBe(404);
    expect(((await root.json()) as { message: string }).message).toBe(
      'no route for GET "/": the API and its paths are described at /docs',
    );
    expect(await counter('http_rejections_total{reason="unknown_route"}')).toBe(routes + 2);
    expect(await counter('http_rejections_total{reason="unsupported_media_type"}')).toBe(media + 3);
  });

  it("REST requests refused before the service: a badly typed parameter, a wrong method", async () => {
    const invalid = await counter('http_rejections_total{reason="rest_invalid_request"}');
    const method = await counter('http_rejections_total{reason="method_not_allowed"}');
    expect((await fetch(`${server.baseUrl}/v1/agents?limit=abc`)).status).toBe(400);
    const long = await fetch(`${server.baseUrl}/v1/agents?${"q".repeat(3000)}=1`);
    expect(long.status).toBe(400);
    expect((await long.text()).length).toBeLessThan(1000);
    expect((await fetch(`${server.baseUrl}/v1/tokens/prices`, { method: "DELETE" })).status).toBe(405);
    expect(await counter('http_rejections_total{reason="rest_invalid_request"}')).toBe(invalid + 2);
    expect(await counter('http_rejections_total{reason="method_not_allowed"}')).toBe(method + 1);
  });

  it("a 404 quotes only a short prefix of the path", async () => {
    const res = await fetch(`${server.baseUrl}/${"y".repeat(8000)}`);
    expect((await res.text()).length).toBeLessThan(300);
  });
});

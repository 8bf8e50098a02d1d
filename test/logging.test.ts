/**
 * Call logs on the real server, read from the lines it wrote: one line per call with procedure,
 * protocol, code, duration and request id; the request id echoed to the caller whether it sent one
 * or not; and credentials in MONGODB_URI never written anywhere, failed calls included.
 */
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AgentService } from "../gen/agent/v1/agent_pb.ts";
import { TokenService } from "../gen/token/v1/token_pb.ts";
import { useCleanups } from "./support/cleanups.ts";
import { type RunningServer, startServer } from "./support/start-server.ts";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const PRICES = "/token.v1.TokenService/GetTokenPrices";
const METADATA = "/token.v1.TokenService/GetTokenMetadata";
/** pino's numeric levels. */
const INFO = 30;
const WARN = 40;

const defer = useCleanups();

async function server(env: Record<string, string> = {}): Promise<RunningServer> {
  const s = await startServer({ env });
  defer(() => s.close());
  return s;
}

const callLines = (s: RunningServer) => s.logs.filter((l) => l.msg === "rpc");

function clients(baseUrl: string) {
  return {
    connect: createClient(
      TokenService,
      createConnectTransport({ baseUrl, httpVersion: "1.1", useBinaryFormat: false }),
    ),
    connectGet: createClient(
      TokenService,
      createConnectTransport({ baseUrl, httpVersion: "1.1", useBinaryFormat: false, useHttpGet: true }),
    ),
    grpc: createClient(TokenService, createGrpcTransport({ baseUrl })),
  };
}

/** Calls GetTokenPrices and returns the x-request-id response header. */
async function pricesRequestId(
  client: ReturnType<typeof clients>["connect"],
  headers: Record<string, string> = {},
): Promise<string | null> {
  let id: string | null = null;
  await client.getTokenPrices({ symbol: "SOL" }, { headers, onHeader: (h) => (id = h.get("x-request-id")) });
  return id;
}

describe("call log lines", () => {
  // One server for these cases; each reads only the lines its own calls wrote.
  let shared: RunningServer;
  beforeAll(async () => {
    shared = await startServer();
  });
  afterAll(async () => {
    await shared?.close();
  });
  it("writes one line per call with procedure, protocol, code, duration and request id", async () => {
    const s = shared;
    const c = clients(s.baseUrl);
    const before = callLines(s).length;
    await c.connect.getTokenPrices({});
    await c.connectGet.getTokenPrices({});
    await c.grpc.getTokenPrices({});
    await c.connect.getTokenMetadata({ mint: "bad" }).catch(() => {});
    await c.grpc.getTokenMetadata({ mint: "11111111111111111111111111111111" }).catch(() => {});

    const lines = callLines(s).slice(before);
    expect(lines).toHaveLength(5);
    expect(lines.map((l) => [l.procedure, l.protocol, l.code, l.level])).toEqual([
      [PRICES, "connect+json", "ok", INFO],
      [PRICES, "connect+json", "ok", INFO],
      [PRICES, "grpc+proto", "ok", INFO],
      // Client mistakes are the caller's business: info, not warn or error.
      [METADATA, "connect+json", "invalid_argument", INFO],
      [METADATA, "grpc+proto", "not_found", INFO],
    ]);
    for (const line of lines) {
      expect(typeof line.duration_ms).toBe("number");
      expect(line.duration_ms).toBeGreaterThanOrEqual(0);
      expect(line.request_id).toMatch(UUID);
    }
    expect(new Set(lines.map((l) => l.request_id)).size).toBe(5);
    // Neither request payloads nor headers are logged.
    expect(JSON.stringify(lines)).not.toContain("11111111111111111111111111111111");
  });

  it.each(["connect", "grpc"] as const)("over %s: echoes a given x-request-id and logs it", async (name) => {
    const s = shared;
    const client = clients(s.baseUrl)[name];
    const given = `req-2024.abc_XYZ-${name}`;
    expect(await pricesRequestId(client, { "x-request-id": given })).toBe(given);
    expect(callLines(s).at(-1)?.request_id).toBe(given);
  });

  it.each(["connect", "grpc"] as const)(
    "over %s: generates a request id when none is given",
    async (name) => {
      const s = await server();
      const client = clients(s.baseUrl)[name];
      const id = await pricesRequestId(client);
      expect(id).toMatch(UUID);
      expect(callLines(s).at(-1)?.request_id).toBe(id);
    },
  );

  it("stamps each line with the time it was written, in ISO form", async () => {
    const c = clients(shared.baseUrl);
    const stamps: [number, string, number][] = [];
    for (let i = 0; i < 3; i++) {
      const before = Date.now();
      await c.connect.getTokenPrices({});
      stamps.push([before, callLines(shared).at(-1)?.time as string, Date.now()]);
      // Lines a few milliseconds apart must not share a stamp.
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    for (const [before, time, after] of stamps) {
      expect(time).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      expect(Date.parse(time)).toBeGreaterThanOrEqual(before);
      expect(Date.parse(time)).toBeLessThanOrEqual(after);
    }
  });

  it("replaces a request id that is too long or has other characters", async () => {
    const s = shared;
    const client = clients(s.baseUrl).connect;
    for (const bad of ["a".repeat(129), "has space", 'quote"d', "semi;colon", "slash/es", "%C3%BC"]) {
      const id = await pricesRequestId(client, { "x-request-id": bad });
      expect(id, bad).toMatch(UUID);
      expect(callLines(s).at(-1)?.request_id, bad).toBe(id);
    }
    expect(await pricesRequestId(client, { "x-request-id": "a".repeat(128) })).toBe("a".repeat(128));
  });

  it("echoes the request id with errors too: Connect in headers, gRPC in trailers", async () => {
    const s = shared;
    const c = clients(s.baseUrl);
    for (const [name, client] of [
      ["connect", c.connect],
      ["grpc", c.grpc],
    ] as const) {
      const error = await client
        .getTokenMetadata({ mint: "bad" }, { headers: { "x-request-id": `err-${name}` } })
        .then(
          () => undefined,
          (e: unknown) => ConnectError.from(e),
        );
      expect(error?.code, name).toBe(Code.InvalidArgument);
      expect(error?.metadata.get("x-request-id"), name).toBe(`err-${name}`);
      expect(callLines(s).at(-1)?.request_id).toBe(`err-${name}`);
    }
  });
});

describe("credentials", () => {
  it("never logs the MongoDB password, not even when calls fail for want of the database", async () => {
    const password = "s3cretPassw0rd";
    // Nothing listens on port 1: the driver fails to connect, quickly.
    const s = await server({
      MONGODB_URI: `mongodb://user:${password}@127.0.0.1:1/db?authSource=admin`,
      MONGODB_SERVER_SELECTION_TIMEOUT_MS: "300",
      MONGODB_CONNECT_TIMEOUT_MS: "300",
    });
    const agents = createClient(AgentService, createGrpcTransport({ baseUrl: s.baseUrl }));
    const error = await agents.listAgents({}, { headers: { "x-request-id": "no-db-1" } }).then(
      () => undefined,
      (e: unknown) => ConnectError.from(e),
    );
    expect(error?.code).toBe(Code.Unavailable);
    expect(error?.rawMessage).not.toContain(password);
    expect((await fetch(`${s.baseUrl}/readyz`)).status).toBe(503);

    // The failure was logged, with its request id, as a warning: an outage, not a bug.
    const forCall = s.logs.filter((l) => l.request_id === "no-db-1");
    expect(forCall.map((l) => l.msg).sort()).toEqual(["dependency unavailable", "rpc"]);
    for (const line of forCall) expect(line.level).toBe(WARN);
    expect(forCall.find((l) => l.msg === "rpc")?.code).toBe("unavailable");
    // The startup line names the database without the password.
    expect(s.logs.some((l) => String(l.mongodb).includes("user:****@127.0.0.1:1"))).toBe(true);

    await s.close();
    const everything = JSON.stringify(s.logs);
    expect(everything).not.toContain(password);
    expect(everything).not.toContain(encodeURIComponent(password));
  });
});

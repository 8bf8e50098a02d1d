/**
 * gRPC server reflection, v1 and v1alpha, on the real server: as tools use it (buf curl, and
 * grpcurl when it is installed), and through a reflection client asking each kind of question,
 * the answers decoded and checked against the generated descriptors.
 */
import { execFile } from "node:child_process";
import { connect } from "node:http2";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { create, createFileRegistry, fromBinary, type MessageInitShape, toBinary } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import { Code, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AgentService } from "../gen/agent/v1/agent_pb.ts";
import {
  ServerReflection as ServerReflectionV1,
  ServerReflectionRequestSchema as V1RequestSchema,
} from "../gen/grpc/reflection/v1/reflection_pb.ts";
import { ServerReflection as ServerReflectionV1alpha } from "../gen/grpc/reflection/v1alpha/reflection_pb.ts";
import { TokenService } from "../gen/token/v1/token_pb.ts";
import { loadCatalog } from "../src/token/catalog.ts";
import { catalogPriceJson, catalogToken } from "./support/catalog-prices.ts";
import { ensureGrpcurl } from "./support/grpcurl.ts";
import { type RunningServer, startServer } from "./support/start-server.ts";

const run = promisify(execFile);
const BUF = fileURLToPath(new URL("../node_modules/.bin/buf", import.meta.url));

const CONTRACT_METHODS = [
  ...TokenService.methods.map((m) => `token.v1.TokenService/${m.name}`),
  ...AgentService.methods.map((m) => `agent.v1.AgentService/${m.name}`),
];
const SERVED = [
  "agent.v1.AgentService",
  "auth.v1.ApiKeyService",
  "grpc.health.v1.Health",
  "grpc.reflection.v1.ServerReflection",
  "grpc.reflection.v1alpha.ServerReflection",
  "token.v1.TokenService",
  "webhook.v1.WebhookService",
];

const sol = loadCatalog().tokens.find((t) => t.symbol === "SOL");

let server: RunningServer;
beforeAll(async () => {
  server = await startServer();
});
afterAll(async () => {
  await server?.close();
});

async function bufCurl(...args: string[]): Promise<string> {
  const { stdout } = await run(BUF, ["curl", "--http2-prior-knowledge", ...args], { timeout: 20_000 });
  return stdout;
}

describe("buf curl", () => {
  it("lists every method of the contract, and health's, by reflection", async () => {
    const listed = (await bufCurl("--list-methods", server.baseUrl)).trim().split("\n");
    // The seed's seven at least; the list itself comes from the descriptors.
    expect(CONTRACT_METHODS.length).toBeGreaterThanOrEqual(7);
    for (const method of CONTRACT_METHODS) expect(listed).toContain(method);
    for (const method of ["Check", "Watch"]) expect(listed).toContain(`grpc.health.v1.Health/${method}`);
    expect(listed).toContain("grpc.reflection.v1.ServerReflection/ServerReflectionInfo");
  });

  it.each([["grpc-v1"], ["grpc-v1alpha"]])(
    "calls GetTokenPrices without --schema, resolving it by reflection (%s)",
    async (protocol) => {
      const out = await bufCurl(
        "--reflect-protocol",
        protocol,
        "--data",
        '{"symbol":"sol"}',
        `${server.baseUrl}/token.v1.TokenService/GetTokenPrices`,
      );
      expect(JSON.parse(out)).toEqual({
        success: true,
        data: [catalogPriceJson(catalogToken("SOL"), { omitZero: true })],
      });
    },
  );

  it("calls over gRPC too, errors and their details included", async () => {
    const failed = await run(
      BUF,
      [
        "curl",
        "--http2-prior-knowledge",
        "--protocol",
        "grpc",
        "--data",
        '{"mint":"not-a-mint"}',
        `${server.baseUrl}/token.v1.TokenService/GetTokenMetadata`,
      ],
      { timeout: 20_000 },
    ).then(
      () => undefined,
      (e: { stderr: string }) => e,
    );
    expect(failed).toBeDefined();
    const error = JSON.parse(failed?.stderr ?? "{}") as { code: string; details: { type: string }[] };
    expect(error.code).toBe("invalid_argument");
    expect(error.details[0]?.type).toBe("google.rpc.BadRequest");
  });
});

describe("grpcurl, an independent reflection client", () => {
  let GRPCURL: string;
  beforeAll(async () => {
    GRPCURL = await ensureGrpcurl();
  }, 240_000);
  const grpcurl = (...args: string[]) =>
    run(GRPCURL, ["-plaintext", ...args], { timeout: 20_000 }).then((r) => r.stdout);

  it("lists the services and describes a method's messages", async () => {
    const target = `127.0.0.1:${server.port}`;
    expect((await grpcurl(target, "list")).trim().split("\n")).toEqual(SERVED);
    expect(await grpcurl(target, "describe", "agent.v1.CreateAgentRequest")).toContain(
      ".google.protobuf.Struct config = 2;",
    );
    const out = await grpcurl("-d", '{"symbol":"SOL"}', target, "token.v1.TokenService/GetTokenPrices");
    expect(JSON.parse(out).data[0].mint).toBe(sol?.mint);
  });

  it("decodes a google.rpc.BadRequest detail, as the reflected files include its definition", async () => {
    const failed = await run(
      GRPCURL,
      [
        "-plaintext",
        "-d",
        '{"mint":"x"}',
        `127.0.0.1:${server.port}`,
        "token.v1.TokenService/GetTokenMetadata",
      ],
      { timeout: 20_000 },
    ).then(
      () => undefined,
      (e: { stdout: string; stderr: string }) => e,
    );
    const text = `${failed?.stdout}${failed?.stderr}`;
    expect(text).toContain("InvalidArgument");
    expect(text).toContain('"fieldViolations"');
    expect(text).not.toContain("is not recognized");
  });
});

type Request = MessageInitShape<typeof V1RequestSchema>;

async function* stream<T>(items: T[]): AsyncGenerator<T> {
  yield* items;
}

/** One reflection stream: sends the requests in order and returns the responses, for both versions. */
const versions = {
  v1: async (requests: Request[]) => {
    const client = createClient(ServerReflectionV1, createGrpcTransport({ baseUrl: server.baseUrl }));
    const out = [];
    for await (const res of client.serverReflectionInfo(
      stream(requests.map((r) => create(V1RequestSchema, r))),
    )) {
      out.push(res);
    }
    return out;
  },
  v1alpha: async (requests: Request[]) => {
    const client = createClient(ServerReflectionV1alpha, createGrpcTransport({ baseUrl: server.baseUrl }));
    const out = [];
    for await (const res of client.serverReflectionInfo(stream(requests) as never)) out.push(res);
    return out;
  },
};

function filesOf(res: Awaited<ReturnType<(typeof versions)["v1"]>>[number]) {
  if (res.messageResponse.case !== "fileDescriptorResponse") {
    throw new Error(
      `expected files, got ${res.messageResponse.case}: ${JSON.stringify(res.messageResponse.value)}`,
    );
  }
  return res.messageResponse.value.fileDescriptorProto.map((b) => fromBinary(FileDescriptorProtoSchema, b));
}

describe.each(Object.keys(versions) as (keyof typeof versions)[])("reflection client (%s)", (version) => {
  const ask = (requests: Request[]) => versions[version](requests);

  it("lists the served services, health and reflection included", async () => {
    const [res] = await ask([{ messageRequest: { case: "listServices", value: "" } }]);
    expect(res?.messageResponse.case).toBe("listServicesResponse");
    const names =
      res?.messageResponse.case === "listServicesResponse" ? res.messageResponse.value.service : [];
    expect(names.map((s) => s.name).sort()).toEqual(SERVED);
  });

  it("file_containing_symbol answers the declaring file with its transitive dependencies, each once per stream", async () => {
    const [first, second] = await ask([
      { messageRequest: { case: "fileContainingSymbol", value: "agent.v1.AgentService" } },
      { messageRequest: { case: "fileContainingSymbol", value: "agent.v1.CreateAgentRequest" } },
    ]);
    const files = filesOf(first as never);
    expect(files[0]?.name).toBe("agent/v1/agent.proto");
    expect(files.map((f) => f.name).sort()).toEqual([
      "agent/v1/agent.proto",
      // The REST paths' google.api.http option, and the descriptor.proto it extends.
      "google/api/annotations.proto",
      "google/api/http.proto",
      "google/protobuf/descriptor.proto",
      "google/protobuf/struct.proto",
      "google/protobuf/timestamp.proto",
    ]);
    // The files are complete: a registry can be built from them alone and resolves the service.
    const [agentFile] = files as [(typeof files)[number]];
    const registry = createFileRegistry(agentFile, (name) => files.find((f) => f.name === name));
    const service = registry.getService("agent.v1.AgentService");
    expect(service?.methods.map((m) => m.name)).toEqual(AgentService.methods.map((m) => m.name));
    // Later on the same stream the dependencies are not sent again.
    expect(filesOf(second as never).map((f) => f.name)).toEqual(["agent/v1/agent.proto"]);
  });

  it.each([
    ["a method", "token.v1.TokenService.GetTokenPrices", "token/v1/token.proto"],
    ["a message", "token.v1.GetTokenPricesResponse", "token/v1/token.proto"],
    ["a field", "token.v1.GetTokenPricesRequest.mint", "token/v1/token.proto"],
    ["a nested enum", "grpc.health.v1.HealthCheckResponse.ServingStatus", "health/v1/health.proto"],
    ["a nested message", "google.protobuf.Struct.FieldsEntry", "google/protobuf/struct.proto"],
    ["a leading dot", ".token.v1.TokenService", "token/v1/token.proto"],
  ])("file_containing_symbol finds %s", async (_, symbol, file) => {
    const [res] = await ask([{ messageRequest: { case: "fileContainingSymbol", value: symbol } }]);
    expect(filesOf(res as never)[0]?.name).toBe(file);
  });

  it("file_by_filename answers the file", async () => {
    const [res] = await ask([{ messageRequest: { case: "fileByFilename", value: "token/v1/token.proto" } }]);
    const [file] = filesOf(res as never);
    expect(file?.service.map((s) => s.name)).toEqual(["TokenService"]);
  });

  it("unknown names get a NOT_FOUND error_response on a stream that stays usable", async () => {
    const responses = await ask([
      { messageRequest: { case: "fileContainingSymbol", value: "no.such.Symbol" } },
      { messageRequest: { case: "fileByFilename", value: "no/such.proto" } },
      {
        messageRequest: {
          case: "fileContainingExtension",
          value: { containingType: "token.v1.GetTokenPricesRequest", extensionNumber: 100 },
        },
      },
      { messageRequest: { case: "allExtensionNumbersOfType", value: "no.such.Message" } },
      { messageRequest: { case: "listServices", value: "" } },
    ]);
    expect(responses).toHaveLength(5);
    for (const res of responses.slice(0, 4)) {
      expect(res.messageResponse.case).toBe("errorResponse");
      if (res.messageResponse.case === "errorResponse") {
        expect(res.messageResponse.value.errorCode).toBe(Code.NotFound);
      }
    }
    expect(responses[0]?.originalRequest?.messageRequest.value).toBe("no.such.Symbol");
    expect(responses[4]?.messageResponse.case).toBe("listServicesResponse");
  });

  it("all_extension_numbers_of_type answers an empty list for a known message", async () => {
    const [res] = await ask([
      { messageRequest: { case: "allExtensionNumbersOfType", value: "token.v1.GetTokenPricesRequest" } },
    ]);
    expect(res?.messageResponse.case).toBe("allExtensionNumbersResponse");
    if (res?.messageResponse.case === "allExtensionNumbersResponse") {
      expect(res.messageResponse.value.baseTypeName).toBe("token.v1.GetTokenPricesRequest");
      expect(res.messageResponse.value.extensionNumber).toEqual([]);
    }
  });
});

describe("a reflection client that hangs up mid-stream (buf curl stopped with Ctrl-C)", () => {
  it.each([["application/grpc"], ["application/connect+proto"]])(
    "is canceled, logged at info, with no error line (%s)",
    async (contentType) => {
      const procedure = "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo";
      const session = connect(server.baseUrl);
      const stream = session.request({
        ":method": "POST",
        ":path": procedure,
        "content-type": contentType,
        te: "trailers",
      });
      // One list_services request, the stream left open as a client keeps it for more questions.
      const request = toBinary(
        V1RequestSchema,
        create(V1RequestSchema, { messageRequest: { case: "listServices", value: "" } }),
      );
      const frame = Buffer.alloc(5 + request.byteLength);
      frame.writeUInt32BE(request.byteLength, 1);
      frame.set(request, 5);
      stream.write(frame);
      await new Promise((resolve) => stream.once("data", resolve));
      const before = server.logs.length;
      session.destroy();
      const line = await until(async () =>
        server.logs.slice(before).find((l) => l.procedure === procedure && l.msg === "rpc"),
      );
      expect(line).toMatchObject({ level: 30, code: "canceled" });
      expect(server.logs.slice(before).filter((l) => Number(l.level) >= 50)).toEqual([]);
    },
  );
});

async function until<T>(probe: () => Promise<T | undefined>): Promise<T> {
  for (let i = 0; i < 100; i++) {
    const value = await probe();
    if (value !== undefined) return value;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error("not within 5 s");
}

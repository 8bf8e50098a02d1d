import { fileURLToPath } from "node:url";
import {
  createRegistry,
  type DescMessage,
  type DescMethod,
  type DescService,
  fromBinary,
  type JsonValue,
  ScalarType,
  toJson,
} from "@bufbuild/protobuf";
import { anyUnpack } from "@bufbuild/protobuf/wkt";
import { ConnectError, createClient, type Transport } from "@connectrpc/connect";
import {
  createConnectTransport,
  createGrpcTransport,
  createGrpcWebTransport,
} from "@connectrpc/connect-node";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import {
  type BadRequest,
  BadRequestSchema,
  file_google_rpc_error_details,
} from "../../gen/google/rpc/error_details_pb.ts";
import { StatusSchema } from "../../gen/google/rpc/status_pb.ts";

/** What a call came to, in one shape whatever the client: the response as JSON, or the error. */
export type Outcome =
  | { readonly ok: true; readonly json: Record<string, JsonValue> }
  | {
      readonly ok: false;
      /** The gRPC status code number (Connect's Code enum uses the same numbers). */
      readonly code: number;
      readonly message: string;
      readonly violations: readonly { field: string; description: string }[];
    };

export type Caller = (
  service: DescService,
  method: string,
  request: Record<string, unknown>,
  headers?: Record<string, string>,
) => Promise<Outcome>;

export interface Protocol {
  readonly name: string;
  readonly call: Caller;
  close(): void;
}

/** The protocols every contract case runs over: four connect-node transports and grpc-js. */
export function createProtocols(baseUrl: string): Protocol[] {
  return [
    connectProtocol("connect+json (HTTP/1.1)", createConnectTransport({ baseUrl, httpVersion: "1.1" })),
    connectProtocol(
      "connect+proto (HTTP/2)",
      createConnectTransport({ baseUrl, httpVersion: "2", useBinaryFormat: true }),
    ),
    connectProtocol("grpc (HTTP/2)", createGrpcTransport({ baseUrl })),
    connectProtocol("grpc-web (HTTP/1.1)", createGrpcWebTransport({ baseUrl, httpVersion: "1.1" })),
    grpcJsProtocol(baseUrl),
  ];
}

export function connectProtocol(name: string, transport: Transport): Protocol {
  return {
    name,
    async call(service, method, request, headers) {
      const desc = methodOf(service, method);
      const client = createClient(service, transport) as unknown as Record<
        string,
        (req: unknown, options: unknown) => Promise<never>
      >;
      try {
        const response = await (client[desc.localName] as (r: unknown, o: unknown) => Promise<unknown>)(
          request,
          {
            headers,
          },
        );
        return {
          ok: true,
          json: toJson(desc.output, response as never, { alwaysEmitImplicit: true }) as never,
        };
      } catch (error) {
        const e = ConnectError.from(error);
        const details = e.findDetails(BadRequestSchema);
        return { ok: false, code: e.code, message: e.rawMessage, violations: violationsOf(details) };
      }
    },
    close() {},
  };
}

const protoDir = fileURLToPath(new URL("../../proto", import.meta.url));
/** google/api/annotations.proto (the REST rules), imported by the contract, from its published package. */
const googleProtoDir = fileURLToPath(new URL("../../node_modules/google-proto-files", import.meta.url));

/** An independent gRPC client: grpc-js with the contract loaded from proto/ by proto-loader. */
export function grpcJsProtocol(baseUrl: string): Protocol {
  const definition = protoLoader.loadSync(
    ["token/v1/token.proto", "agent/v1/agent.proto", "auth/v1/auth.proto", "webhook/v1/webhook.proto"],
    {
      includeDirs: [protoDir, googleProtoDir],
      keepCase: false,
      longs: Number,
      defaults: true,
      arrays: true,
      oneofs: true,
    },
  );
  const loaded = grpc.loadPackageDefinition(definition);
  const target = new URL(baseUrl).host;
  const clients = new Map<string, grpc.Client>();
  const clientFor = (typeName: string): grpc.Client => {
    let client = clients.get(typeName);
    if (client === undefined) {
      const ctor = typeName.split(".").reduce<unknown>((o, k) => (o as Record<string, unknown>)[k], loaded);
      client = new (ctor as typeof grpc.Client)(target, grpc.credentials.createInsecure());
      clients.set(typeName, client);
    }
    return client;
  };
  const registry = createRegistry(file_google_rpc_error_details);
  return {
    name: "grpc-js (independent client)",
    call(service, method, request, headers) {
      const desc = methodOf(service, method);
      const client = clientFor(service.typeName) as unknown as Record<
        string,
        (req: unknown, md: grpc.Metadata, cb: (e: grpc.ServiceError | null, r: unknown) => void) => void
      >;
      const metadata = new grpc.Metadata();
      for (const [k, v] of Object.entries(headers ?? {})) metadata.set(k, v);
      return new Promise((resolve) => {
        (client[desc.name] as (...a: unknown[]) => void).call(
          client,
          request,
          metadata,
          (error: grpc.ServiceError | null, response: unknown) => {
            if (error === null) {
              resolve({ ok: true, json: normalizeGrpcJs(response, desc.output) as never });
              return;
            }
            const bin = error.metadata.get("grpc-status-details-bin")[0];
            let details: BadRequest[] = [];
            if (bin instanceof Buffer) {
              const status = fromBinary(StatusSchema, bin);
              details = status.details.flatMap((any) => {
                const unpacked = anyUnpack(any, registry);
                return unpacked?.$typeName === "google.rpc.BadRequest" ? [unpacked as BadRequest] : [];
              });
            }
            resolve({
              ok: false,
              code: error.code,
              message: error.details,
              violations: violationsOf(details),
            });
          },
        );
      });
    },
    close() {
      for (const client of clients.values()) client.close();
    },
  };
}

function methodOf(service: DescService, name: string): DescMethod {
  const method = service.methods.find((m) => m.name === name);
  if (method === undefined) throw new Error(`${service.typeName} has no method ${name}`);
  return method;
}

function violationsOf(details: BadRequest[]) {
  return details.flatMap((d) =>
    d.fieldViolations.map((v) => ({ field: v.field, description: v.description })),
  );
}

/**
 * Brings a proto-loader object into the proto3 JSON shape, using the schema for JSON names
 * (logoURI), and turning Timestamp and Struct objects into their JSON forms, so that grpc-js
 * answers compare with the Connect clients' answers.
 */
function normalizeGrpcJs(value: unknown, schema: DescMessage): JsonValue {
  const object = value as Record<string, unknown>;
  if (schema.typeName === "google.protobuf.Timestamp") {
    const ms = Number(object.seconds) * 1000 + Math.floor(Number(object.nanos) / 1e6);
    return new Date(ms).toISOString().replace(".000Z", "Z");
  }
  if (schema.typeName === "google.protobuf.Struct") return structJson(object);
  const out: Record<string, JsonValue> = {};
  for (const field of schema.fields) {
    const v = object[field.localName];
    if (v === null || v === undefined) continue;
    if (field.fieldKind === "message") out[field.jsonName] = normalizeGrpcJs(v, field.message);
    else if (field.fieldKind === "list" && field.listKind === "message")
      out[field.jsonName] = (v as unknown[]).map((e) => normalizeGrpcJs(e, field.message));
    else if (field.fieldKind === "scalar" && INT64_TYPES.has(field.scalar)) out[field.jsonName] = String(v);
    else out[field.jsonName] = v as JsonValue;
  }
  return out;
}

/** 64-bit integers: proto3 JSON writes them as decimal strings (proto-loader gives numbers). */
const INT64_TYPES = new Set([
  ScalarType.INT64,
  ScalarType.UINT64,
  ScalarType.SINT64,
  ScalarType.FIXED64,
  ScalarType.SFIXED64,
]);

function structJson(struct: Record<string, unknown>): JsonValue {
  const out: Record<string, JsonValue> = {};
  for (const [k, v] of Object.entries((struct.fields ?? {}) as Record<string, unknown>))
    out[k] = valueJson(v);
  return out;
}

function valueJson(value: unknown): JsonValue {
  const v = value as Record<string, unknown>;
  switch (v.kind) {
    case "nullValue":
      return null;
    case "numberValue":
      return v.numberValue as number;
    case "stringValue":
      return v.stringValue as string;
    case "boolValue":
      return v.boolValue as boolean;
    case "structValue":
      return structJson(v.structValue as Record<string, unknown>);
    case "listValue":
      return ((v.listValue as { values: unknown[] }).values ?? []).map(valueJson);
    default:
      return null;
  }
}

/**
 * `protocol` with a request's `config` object (a google.protobuf.Struct) turned into the message
 * form grpc-js (proto-loader) takes; the Connect clients take the JSON object as it is.
 */
export function withStructConfig(protocol: Protocol): Protocol {
  if (!protocol.name.startsWith("grpc-js")) return protocol;
  const isObject = (value: unknown): value is Record<string, unknown> =>
    typeof value === "object" && value !== null && !Array.isArray(value);
  const toValue = (value: unknown): Record<string, unknown> => {
    if (value === null) return { nullValue: "NULL_VALUE" };
    if (typeof value === "number") return { numberValue: value };
    if (typeof value === "string") return { stringValue: value };
    if (typeof value === "boolean") return { boolValue: value };
    if (Array.isArray(value)) return { listValue: { values: value.map(toValue) } };
    if (isObject(value)) return { structValue: toStruct(value) };
    throw new Error(`no Struct value for ${String(value)}`);
  };
  const toStruct = (object: Record<string, unknown>) => ({
    fields: Object.fromEntries(Object.entries(object).map(([k, v]) => [k, toValue(v)])),
  });
  return {
    ...protocol,
    call: (service, method, request, headers) =>
      protocol.call(
        service,
        method,
        isObject(request.config) ? { ...request, config: toStruct(request.config) } : request,
        headers,
      ),
  };
}

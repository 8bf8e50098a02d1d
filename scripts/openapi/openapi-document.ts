/**
 * An OpenAPI 3.1 document for every RPC with a google.api.http rule in the given files: paths,
 * parameters and bodies as the REST handler serves them (both read the rules through
 * src/rest/rest-bindings.ts), schemas per the proto3 JSON mapping (JSON names, 64-bit integers as
 * strings, Timestamp as a date-time string, Struct as an object), and the proto comments as
 * descriptions. Runs at `buf generate` time, where descriptors still carry their comments.
 */
import {
  type DescExtension,
  type DescField,
  type DescFile,
  type DescMessage,
  type DescMethod,
  getOption,
  hasOption,
  ScalarType,
} from "@bufbuild/protobuf";
import { FeatureSet_FieldPresence } from "@bufbuild/protobuf/wkt";
import { getComments } from "@bufbuild/protoplugin";
import type { UrlFieldType } from "../../src/rest/field-value.ts";
import {
  type HttpRuleLike,
  type RestBinding,
  restBindingsOf,
  type UrlField,
} from "../../src/rest/rest-bindings.ts";

type Schema = Record<string, unknown>;

export interface OpenApiOptions {
  readonly title: string;
  readonly version: string;
  /** The google.api.http extension, as the descriptors' registry resolved it. */
  readonly httpExtension: DescExtension;
  /**
   * True when the server writes fields with implicit presence even at their zero value (JSON
   * option alwaysEmitImplicit): response schemas then mark those members required.
   */
  readonly alwaysEmitImplicit: boolean;
}

/** The document, or undefined when no service in `files` has an annotated method. */
export function openApiDocument(files: readonly DescFile[], options: OpenApiOptions): Schema | undefined {
  const methods = files.flatMap((file) =>
    file.services.flatMap((service) => service.methods.filter((m) => hasOption(m, options.httpExtension))),
  );
  if (methods.length === 0) return undefined;
  const inputs = reachable(methods.map((m) => m.input));
  const outputs = reachable(methods.map((m) => m.output));
  const schemas: Record<string, Schema> = {};
  for (const message of new Set([...inputs, ...outputs])) {
    schemas[message.typeName] = messageSchema(message, options.alwaysEmitImplicit && !inputs.has(message));
  }
  schemas[ERROR_SCHEMA] = connectErrorSchema();

  const paths: Record<string, Record<string, Schema>> = {};
  for (const method of methods) {
    const rule = getOption(method, options.httpExtension) as unknown as HttpRuleLike;
    for (const binding of restBindingsOf(method, rule)) {
      paths[binding.path.openApiPath] ??= {};
      (paths[binding.path.openApiPath] as Record<string, Schema>)[binding.httpMethod.toLowerCase()] =
        operation(binding);
    }
  }
  const services = [...new Set(methods.map((m) => m.parent))];
  return {
    openapi: "3.1.0",
    info: { title: options.title, version: options.version },
    tags: services.map((s) => ({ name: s.name, description: commentOf(s) })),
    paths,
    components: {
      schemas,
      // API keys (AUTH_MODE=apikey): /docs sends the key typed into its Authorize dialog.
      securitySchemes: {
        apiKey: {
          type: "http",
          scheme: "bearer",
          description:
            "An API key (tas_…), sent as authorization: Bearer <key>. Needed when the server runs with " +
            "AUTH_MODE=apikey; each operation needs the scope its service names.",
        },
      },
    },
    security: [{ apiKey: [] }],
  };
}

const ERROR_SCHEMA = "connect.error";

function operation(binding: RestBinding): Schema {
  const { method } = binding;
  const description = commentOf(method);
  const op: Schema = {
    operationId: `${method.parent.name}_${method.name}`,
    tags: [method.parent.name],
    summary: description?.split(/(?<=\.)\s/, 1)[0],
    description,
  };
  const parameters = [
    ...binding.pathFields.map((f) => parameter(f, "path", f.protoPath)),
    ...binding.queryFields.map((f) => parameter(f, "query", f.jsonPath)),
  ];
  if (parameters.length > 0) op.parameters = parameters;
  if (binding.body.kind !== "none") {
    const schema =
      binding.body.kind === "all"
        ? refTo(method.input)
        : fieldSchema(binding.body.field, commentOf(binding.body.field));
    op.requestBody = { required: true, content: { "application/json": { schema } } };
  }
  const success =
    method.methodKind === "server_streaming"
      ? {
          description:
            `Success: a stream of Server-Sent Events, each \`data:\` line one ${method.output.name} ` +
            `(#/components/schemas/${method.output.typeName}) as JSON; an error after the stream ` +
            "began is an `event: error` whose data is the Connect error JSON.",
          content: { "text/event-stream": { schema: { type: "string" } } },
        }
      : {
          description: `Success: the ${method.output.name} envelope.`,
          content: { "application/json": { schema: refTo(method.output) } },
        };
  if (method.methodKind === "server_streaming" && method.input.fields.some((f) => f.name === "after")) {
    op.parameters = [
      ...((op.parameters as Schema[] | undefined) ?? []),
      {
        name: "Last-Event-ID",
        in: "header",
        required: false,
        description: "The id of the last event received: resumes after it, as `after` does.",
        schema: { type: "string" },
      },
    ];
  }
  op.responses = {
    "200": success,
    default: {
      description: "An error, as the Connect protocol writes it, with the matching HTTP status.",
      content: { "application/json": { schema: { $ref: `#/components/schemas/${ERROR_SCHEMA}` } } },
    },
  };
  return op;
}

function parameter(field: UrlField, where: "path" | "query", name: string): Schema {
  const last = field.chain[field.chain.length - 1] as DescField;
  const one = urlTypeSchema(field.type);
  return {
    name,
    in: where,
    required: where === "path",
    description: commentOf(last),
    schema: field.repeated ? { type: "array", items: one } : one,
  };
}

function messageSchema(message: DescMessage, requireImplicit: boolean): Schema {
  const properties: Record<string, Schema> = {};
  const required: string[] = [];
  for (const field of message.fields) {
    properties[field.jsonName] = fieldSchema(field, commentOf(field));
    const implicit =
      field.fieldKind === "list" ||
      field.fieldKind === "map" ||
      (field.oneof === undefined &&
        (field.fieldKind === "scalar" || field.fieldKind === "enum") &&
        field.presence === FeatureSet_FieldPresence.IMPLICIT);
    if (requireImplicit && implicit) required.push(field.jsonName);
  }
  return {
    type: "object",
    description: commentOf(message),
    properties,
    ...(required.length > 0 ? { required } : {}),
    // The server rejects members it does not know, and writes none it does not document.
    additionalProperties: false,
  };
}

function fieldSchema(field: DescField, description: string | undefined): Schema {
  let schema: Schema;
  switch (field.fieldKind) {
    case "scalar":
      schema = scalarSchema(field.scalar);
      break;
    case "enum":
      schema = { type: "string", enum: field.enum.values.map((v) => v.name) };
      break;
    case "message":
      schema = refTo(field.message);
      break;
    case "list":
      schema = {
        type: "array",
        items:
          field.listKind === "scalar"
            ? scalarSchema(field.scalar)
            : field.listKind === "enum"
              ? { type: "string", enum: field.enum.values.map((v) => v.name) }
              : refTo(field.message),
      };
      break;
    case "map":
      schema = {
        type: "object",
        additionalProperties:
          field.mapKind === "scalar"
            ? scalarSchema(field.scalar)
            : field.mapKind === "enum"
              ? { type: "string", enum: field.enum.values.map((v) => v.name) }
              : refTo(field.message),
      };
      break;
  }
  // OpenAPI 3.1 (JSON Schema 2020-12) allows keywords beside $ref, so references keep their description.
  return description === undefined ? schema : { ...schema, description };
}

function urlTypeSchema(type: UrlFieldType): Schema {
  if (type.kind === "scalar") return scalarSchema(type.scalar);
  if (type.kind === "enum") return { type: "string", enum: type.enum.values.map((v) => v.name) };
  return refTo(type.message);
}

function scalarSchema(scalar: ScalarType): Schema {
  switch (scalar) {
    case ScalarType.STRING:
      return { type: "string" };
    case ScalarType.BOOL:
      return { type: "boolean" };
    case ScalarType.BYTES:
      return { type: "string", contentEncoding: "base64" };
    case ScalarType.DOUBLE:
      return { type: "number", format: "double" };
    case ScalarType.FLOAT:
      return { type: "number", format: "float" };
    case ScalarType.INT32:
    case ScalarType.SINT32:
    case ScalarType.SFIXED32:
      return { type: "integer", format: "int32" };
    case ScalarType.UINT32:
    case ScalarType.FIXED32:
      return { type: "integer", format: "int64", minimum: 0, maximum: 4294967295 };
    case ScalarType.UINT64:
    case ScalarType.FIXED64:
      // 64-bit integers are JSON strings (a JSON number cannot hold them exactly); numbers are accepted.
      return { type: ["string", "integer"], format: "int64", pattern: "^[0-9]+$", minimum: 0 };
    default:
      return { type: ["string", "integer"], format: "int64", pattern: "^-?[0-9]+$" };
  }
}

/** Well-known types have their own JSON forms, written inline rather than as components. */
const WELL_KNOWN: Record<string, Schema> = {
  "google.protobuf.Timestamp": { type: "string", format: "date-time" },
  "google.protobuf.Duration": { type: "string", pattern: "^-?[0-9]+(\\.[0-9]{1,9})?s$" },
  "google.protobuf.FieldMask": { type: "string" },
  "google.protobuf.Struct": { type: "object", additionalProperties: true },
  "google.protobuf.Value": {},
  "google.protobuf.ListValue": { type: "array" },
  "google.protobuf.Empty": { type: "object", additionalProperties: false },
  "google.protobuf.Any": { type: "object", required: ["@type"], properties: { "@type": { type: "string" } } },
};

function refTo(message: DescMessage): Schema {
  const known = WELL_KNOWN[message.typeName];
  if (known !== undefined) return { ...known };
  if (isWellKnown(message)) {
    const value = message.fields[0]; // a wrapper: its JSON is the wrapped value
    if (value?.fieldKind === "scalar") return scalarSchema(value.scalar);
    return {};
  }
  return { $ref: `#/components/schemas/${message.typeName}` };
}

function isWellKnown(message: DescMessage): boolean {
  return message.typeName.startsWith("google.protobuf.");
}

/** Every message the roots lead to, well-known types left out. */
function reachable(roots: readonly DescMessage[]): Set<DescMessage> {
  const seen = new Set<DescMessage>();
  const visit = (message: DescMessage) => {
    if (seen.has(message) || isWellKnown(message)) return;
    seen.add(message);
    for (const field of message.fields) if (field.message !== undefined) visit(field.message);
  };
  for (const root of roots) visit(root);
  return seen;
}

/** The leading comment (else the trailing one), without comment markers' indentation. */
function commentOf(desc: DescMessage | DescField | DescMethod | DescMethod["parent"]): string | undefined {
  const comments = getComments(desc);
  const text = comments.leading ?? comments.trailing;
  if (text === undefined) return undefined;
  const lines = text.split("\n").map((line) => line.replace(/^ /, "").trimEnd());
  return lines.join("\n").trim() || undefined;
}

/** The Connect protocol's error JSON (https://connectrpc.com/docs/protocol#error-end-stream). */
function connectErrorSchema(): Schema {
  return {
    type: "object",
    description: "A Connect error: a code, a message for developers, and typed details.",
    required: ["code"],
    properties: {
      code: {
        type: "string",
        enum: [
          "canceled",
          "unknown",
          "invalid_argument",
          "deadline_exceeded",
          "not_found",
          "already_exists",
          "permission_denied",
          "resource_exhausted",
          "failed_precondition",
          "aborted",
          "out_of_range",
          "unimplemented",
          "internal",
          "unavailable",
          "data_loss",
          "unauthenticated",
        ],
      },
      message: { type: "string" },
      details: {
        type: "array",
        description:
          "Typed details, e.g. google.rpc.BadRequest with one violation per bad field; debug holds their JSON.",
        items: {
          type: "object",
          required: ["type", "value"],
          properties: {
            type: { type: "string", description: "Fully qualified type name, e.g. google.rpc.BadRequest." },
            value: { type: "string", contentEncoding: "base64", description: "The detail, protobuf binary." },
            debug: { description: "The detail as JSON, for reading; not guaranteed." },
          },
        },
      },
    },
    additionalProperties: false,
  };
}

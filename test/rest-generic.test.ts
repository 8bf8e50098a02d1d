import * as http from "node:http";
import type { AddressInfo } from "node:net";
import {
  create,
  createFileRegistry,
  type DescFile,
  type DescService,
  type MessageInitShape,
  setExtension,
} from "@bufbuild/protobuf";
import {
  type DescriptorProto,
  type DescriptorProtoSchema,
  FieldDescriptorProto_Label,
  FieldDescriptorProto_Type,
  type FileDescriptorProto,
  FileDescriptorProtoSchema,
  file_google_protobuf_timestamp,
  MethodOptionsSchema,
} from "@bufbuild/protobuf/wkt";
import { createConnectRouter, type Interceptor } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { file_google_api_annotations, http as httpRule } from "../gen/google/api/annotations_pb.ts";
import { HttpRuleSchema } from "../gen/google/api/http_pb.ts";
import { createRestHandler } from "../src/rest/rest-handler.ts";

/*
 * "A newly annotated RPC needs no routing code": a service that exists only in this test, built
 * from descriptors at runtime, gets its REST paths from its google.api.http rules alone. Every
 * method echoes its request, so each answer shows exactly which fields the URL and body set.
 */

const { OPTIONAL: ONE, REPEATED: MANY } = FieldDescriptorProto_Label;
const T = FieldDescriptorProto_Type;

function field(name: string, number: number, type: FieldDescriptorProto_Type, extra: object = {}) {
  return { name, number, type, label: ONE, jsonName: camel(name), ...extra };
}

function camel(name: string): string {
  return name.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());
}

function rpc(name: string, rule: MessageInitShape<typeof HttpRuleSchema> | undefined) {
  const options = create(MethodOptionsSchema);
  if (rule !== undefined) setExtension(options, httpRule, create(HttpRuleSchema, rule));
  return { name, inputType: ".test.rest.v1.Widget", outputType: ".test.rest.v1.Widget", options };
}

const widget: MessageInitShape<typeof DescriptorProtoSchema> = {
  name: "Widget",
  field: [
    field("shelf", 1, T.STRING),
    field("widget_id", 2, T.INT64),
    field("verbose", 3, T.BOOL),
    field("tags", 4, T.STRING, { label: MANY }),
    field("kind", 5, T.ENUM, { typeName: ".test.rest.v1.Kind" }),
    field("filter", 6, T.MESSAGE, { typeName: ".test.rest.v1.Filter" }),
    field("since", 7, T.MESSAGE, { typeName: ".google.protobuf.Timestamp" }),
    field("ratio", 8, T.DOUBLE),
    field("count", 9, T.UINT32),
    field("note", 10, T.STRING),
  ],
};

function widgetFile(rules: Record<string, MessageInitShape<typeof HttpRuleSchema> | undefined>): DescFile {
  const proto: FileDescriptorProto = create(FileDescriptorProtoSchema, {
    name: "test/rest/v1/widget.proto",
    package: "test.rest.v1",
    syntax: "proto3",
    dependency: ["google/api/annotations.proto", "google/protobuf/timestamp.proto"],
    messageType: [
      widget,
      { name: "Filter", field: [field("min_size", 1, T.INT32)] } satisfies MessageInitShape<
        typeof DescriptorProtoSchema
      > as DescriptorProto,
    ],
    enumType: [
      {
        name: "Kind",
        value: [
          { name: "KIND_UNSPECIFIED", number: 0 },
          { name: "KIND_ROUND", number: 1 },
        ],
      },
    ],
    service: [
      { name: "WidgetService", method: Object.entries(rules).map(([name, rule]) => rpc(name, rule)) },
    ],
  });
  const deps = [file_google_api_annotations, file_google_protobuf_timestamp];
  const registry = createFileRegistry(proto, (name) =>
    deps.find((f) => f.name === name.replace(/\.proto$/, "")),
  );
  return registry.getFile("test/rest/v1/widget.proto") as DescFile;
}

const file = widgetFile({
  GetWidget: {
    pattern: { case: "get", value: "/v1/shelves/{shelf}/widgets/{widget_id}" },
    additionalBindings: [{ pattern: { case: "get", value: "/v1/widgets/{widget_id}:peek" } }],
  },
  UpdateWidgetFilter: { pattern: { case: "patch", value: "/v1/shelves/{shelf}/filter" }, body: "filter" },
  ReplaceWidget: { pattern: { case: "put", value: "/v1/widgets/{widget_id}" }, body: "*" },
  TouchWidget: { pattern: { case: "custom", value: { kind: "SEARCH", path: "/v1/widgets/{widget_id}" } } },
  Unannotated: undefined,
});
const service = file.services[0] as DescService;

let server: http.Server;
let baseUrl: string;
const intercepted: string[] = [];

beforeAll(async () => {
  const record: Interceptor = (next) => async (req) => {
    intercepted.push(req.method.name);
    return next(req);
  };
  const router = createConnectRouter({ interceptors: [record] });
  const echo = Object.fromEntries(service.methods.map((m) => [m.localName, (req: unknown) => req]));
  router.service(service, echo as never);
  const rest = createRestHandler({
    handlers: router.handlers,
    maxRequestBytes: 1024,
    streamWriteTimeoutMs: 30_000,
  });
  server = http.createServer((req, res) => {
    if (rest(req, res)) return;
    res.statusCode = 404;
    res.end();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server?.close(() => resolve())));

async function call(method: string, path: string, body?: unknown) {
  const response = await fetch(`${baseUrl}${path}`, {
    method,
    ...(body === undefined
      ? {}
      : { body: JSON.stringify(body), headers: { "content-type": "application/json" } }),
  });
  const text = await response.text();
  return { status: response.status, json: text === "" ? undefined : JSON.parse(text) };
}

function fieldsNamed(json: { details?: { debug?: { fieldViolations?: { field: string }[] } }[] }) {
  return (json.details ?? []).flatMap((d) => d.debug?.fieldViolations ?? []).map((v) => v.field);
}

describe("a service annotated only in its descriptors is served over REST", () => {
  it("path variables and typed query parameters of every kind fill the request", async () => {
    const query =
      "verbose=true&tags=a&tags=b&kind=KIND_ROUND&filter.minSize=3&since=2026-01-02T03:04:05Z&ratio=0.5&count=7&note=hi%20there";
    const got = await call("GET", `/v1/shelves/main/widgets/42?${query}`);
    expect(got.status).toBe(200);
    expect(got.json).toEqual({
      shelf: "main",
      widgetId: "42",
      verbose: true,
      tags: ["a", "b"],
      kind: "KIND_ROUND",
      filter: { minSize: 3 },
      since: "2026-01-02T03:04:05Z",
      ratio: 0.5,
      count: 7,
      note: "hi there",
    });
    // Proto names work as well as JSON names; an escaped slash stays inside its segment.
    const proto = await call("GET", "/v1/shelves/a%2Fb/widgets/1?filter.min_size=4&kind=1");
    expect(proto.json).toEqual({ shelf: "a/b", widgetId: "1", filter: { minSize: 4 }, kind: "KIND_ROUND" });
  });

  it("additional bindings, custom methods and verbs route to the same method", async () => {
    expect((await call("GET", "/v1/widgets/7:peek")).json).toEqual({ widgetId: "7" });
    expect((await call("SEARCH", "/v1/widgets/8?note=x")).json).toEqual({ widgetId: "8", note: "x" });
  });

  it('body "field" fills that field, the query the rest; body "*" takes the whole body, the path wins', async () => {
    const patched = await call("PATCH", "/v1/shelves/s1/filter?note=n", { minSize: 5 });
    expect(patched.json).toEqual({ shelf: "s1", note: "n", filter: { minSize: 5 } });
    const put = await call("PUT", "/v1/widgets/9", { widgetId: "1", note: "whole", tags: ["t"] });
    expect(put.json).toEqual({ widgetId: "9", note: "whole", tags: ["t"] });
    // With body "*" nothing is left for the query.
    const query = await call("PUT", "/v1/widgets/9?note=x", {});
    expect(query.status).toBe(400);
    expect(fieldsNamed(query.json)).toEqual(["note"]);
  });

  it("a value of the wrong type is invalid_argument naming its parameter, for every kind", async () => {
    const got = await call(
      "GET",
      "/v1/shelves/main/widgets/abc?verbose=yes&kind=KIND_SQUARE&count=-1&ratio=x&filter.minSize=1.5&widget_id=2",
    );
    expect(got.status).toBe(400);
    expect(got.json.code).toBe("invalid_argument");
    expect(fieldsNamed(got.json).sort()).toEqual(
      ["count", "filter.minSize", "kind", "ratio", "verbose", "widget_id", "widget_id"].sort(),
    );
    expect(got.json.message).toContain("verbose must be true or false");
  });

  it("calls go through the router's interceptors; unannotated methods get no path", async () => {
    intercepted.length = 0;
    await call("GET", "/v1/widgets/1:peek");
    await call("PUT", "/v1/widgets/1", {});
    expect(intercepted).toEqual(["GetWidget", "ReplaceWidget"]);
    expect((await call("GET", "/v1/widgets/1")).status).toBe(405);
    expect((await call("POST", "/test.rest.v1.WidgetService/Unannotated", {})).status).toBe(404);
  });

  it("a rule that binds no field of the request stops startup, naming the method and field", () => {
    const broken = widgetFile({ Broken: { pattern: { case: "get", value: "/v1/{colour}" } } });
    const router = createConnectRouter();
    router.service(broken.services[0] as DescService, {});
    expect(() =>
      createRestHandler({ handlers: router.handlers, maxRequestBytes: 1024, streamWriteTimeoutMs: 30_000 }),
    ).toThrow(/test\.rest\.v1\.WidgetService\.Broken.*no field colour/);
  });
});

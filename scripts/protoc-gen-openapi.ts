/**
 * protoc plugin (run by `buf generate`, see buf.gen.yaml) that writes openapi/openapi.json: the
 * OpenAPI 3.1 document of every RPC with a google.api.http rule, with the proto comments as
 * descriptions. Options (buf.gen.yaml `opt`): `title=...`, `version=...`,
 * `always_emit_implicit=true` (the server's JSON option, so responses list every member).
 */
import { create, createFileRegistry, type DescFile } from "@bufbuild/protobuf";
import {
  type CodeGeneratorRequest,
  CodeGeneratorResponse_Feature,
  CodeGeneratorResponse_FileSchema,
  CodeGeneratorResponseSchema,
  FileDescriptorSetSchema,
} from "@bufbuild/protobuf/wkt";
import { type Plugin, runNodeJs } from "@bufbuild/protoplugin";
import { openApiDocument } from "./openapi/openapi-document.ts";

const plugin: Plugin = {
  name: "protoc-gen-openapi",
  version: "v1",
  run(request: CodeGeneratorRequest) {
    const parameters = new Map(
      request.parameter
        .split(",")
        .filter((p) => p !== "")
        .map((p) => [p.slice(0, p.indexOf("=")), p.slice(p.indexOf("=") + 1)] as const),
    );
    const registry = createFileRegistry(create(FileDescriptorSetSchema, { file: request.protoFile }));
    const httpExtension = registry.getExtension("google.api.http");
    const response = create(CodeGeneratorResponseSchema, {
      supportedFeatures: BigInt(CodeGeneratorResponse_Feature.PROTO3_OPTIONAL),
    });
    // buf runs the plugin once per input; inputs without annotated services write nothing.
    if (httpExtension === undefined) return response;
    const files = request.fileToGenerate.map((name) => registry.getFile(name) as DescFile);
    const document = openApiDocument(files, {
      title: parameters.get("title") ?? "API",
      version: parameters.get("version") ?? "v1",
      httpExtension,
      alwaysEmitImplicit: parameters.get("always_emit_implicit") === "true",
    });
    if (document !== undefined) {
      const content = `${JSON.stringify(document, null, 2)}\n`;
      response.file.push(create(CodeGeneratorResponse_FileSchema, { name: "openapi/openapi.json", content }));
    }
    return response;
  },
};

runNodeJs(plugin);

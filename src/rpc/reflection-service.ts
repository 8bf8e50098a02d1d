import { create, type DescFile, type DescService } from "@bufbuild/protobuf";
import { Code, type ServiceImpl } from "@connectrpc/connect";
import {
  ServerReflection as ServerReflectionV1,
  type ServerReflectionRequest as V1Request,
  ServerReflectionResponseSchema as V1ResponseSchema,
} from "../../gen/grpc/reflection/v1/reflection_pb.ts";
import {
  ServerReflection as ServerReflectionV1alpha,
  type ServerReflectionRequest as V1alphaRequest,
  ServerReflectionResponseSchema as V1alphaResponseSchema,
} from "../../gen/grpc/reflection/v1alpha/reflection_pb.ts";
import { createDescriptorIndex, type DescriptorIndex } from "./descriptor-index.ts";

/** What one request is answered with; the same shape in both versions of the protocol. */
type Answer =
  | { case: "fileDescriptorResponse"; value: { fileDescriptorProto: Uint8Array[] } }
  | { case: "allExtensionNumbersResponse"; value: { baseTypeName: string; extensionNumber: number[] } }
  | { case: "listServicesResponse"; value: { service: { name: string }[] } }
  | { case: "errorResponse"; value: { errorCode: number; errorMessage: string } };

export interface ReflectionServices {
  readonly v1: ServiceImpl<typeof ServerReflectionV1>;
  readonly v1alpha: ServiceImpl<typeof ServerReflectionV1alpha>;
}

/**
 * gRPC server reflection (https://github.com/grpc/grpc/blob/master/doc/server-reflection.md), so
 * buf curl, grpcurl and Postman can list and call the services without a copy of the protos.
 * Served as grpc.reflection.v1 and as the older grpc.reflection.v1alpha that many tools still ask
 * for first; both are one implementation, as their messages are identical but for the package.
 *
 * `services` are the ones listed (the reflection services themselves are added); `files` are more
 * files to describe, such as google.rpc.BadRequest's, so tools can decode error details. A request the
 * index cannot answer gets an error_response on the stream, as the protocol says, never an RPC
 * error, so one unknown symbol does not end a client's session.
 */
export function createReflectionServices(options: {
  services: readonly DescService[];
  files?: readonly DescFile[];
}): ReflectionServices {
  const own = [ServerReflectionV1, ServerReflectionV1alpha].filter((s) => !options.services.includes(s));
  const index = createDescriptorIndex({
    services: [...options.services, ...own],
    ...(options.files === undefined ? {} : { files: options.files }),
  });
  return {
    v1: {
      async *serverReflectionInfo(requests) {
        const sent = new Set<string>();
        for await (const req of requests) {
          yield create(V1ResponseSchema, {
            validHost: req.host,
            originalRequest: req,
            messageResponse: answer(index, req, sent),
          });
        }
      },
    },
    v1alpha: {
      async *serverReflectionInfo(requests) {
        const sent = new Set<string>();
        for await (const req of requests) {
          yield create(V1alphaResponseSchema, {
            validHost: req.host,
            originalRequest: req,
            messageResponse: answer(index, req, sent),
          });
        }
      },
    },
  };
}

function answer(index: DescriptorIndex, req: V1Request | V1alphaRequest, sent: Set<string>): Answer {
  const request = req.messageRequest;
  switch (request.case) {
    case "listServices":
      return {
        case: "listServicesResponse",
        value: { service: index.serviceNames.map((name) => ({ name })) },
      };
    case "fileByFilename":
      return files(index, index.fileByName(request.value), sent, `file ${request.value}`);
    case "fileContainingSymbol":
      return files(index, index.fileContainingSymbol(request.value), sent, `symbol ${request.value}`);
    case "fileContainingExtension": {
      const { containingType, extensionNumber } = request.value;
      const file = index.fileContainingExtension(containingType, extensionNumber);
      return files(index, file, sent, `extension ${extensionNumber} of ${containingType}`);
    }
    case "allExtensionNumbersOfType": {
      const numbers = index.extensionNumbersOf(request.value);
      if (numbers === undefined) return notFound(`message type ${request.value}`);
      return {
        case: "allExtensionNumbersResponse",
        value: { baseTypeName: request.value.replace(/^\./, ""), extensionNumber: numbers },
      };
    }
    default:
      return {
        case: "errorResponse",
        value: { errorCode: Code.InvalidArgument, errorMessage: "the request names nothing to look up" },
      };
  }
}

function files(index: DescriptorIndex, file: DescFile | undefined, sent: Set<string>, what: string): Answer {
  if (file === undefined) return notFound(what);
  return { case: "fileDescriptorResponse", value: { fileDescriptorProto: index.serialize(file, sent) } };
}

function notFound(what: string): Answer {
  // Names come from the caller; bound what is echoed back.
  return {
    case: "errorResponse",
    value: { errorCode: Code.NotFound, errorMessage: `${what.slice(0, 300)} not found` },
  };
}

import { create, createRegistry, type Registry } from "@bufbuild/protobuf";
import { type Any, anyPack } from "@bufbuild/protobuf/wkt";
import { type Code, ConnectError, type HandlerContext, type ServiceImpl } from "@connectrpc/connect";
import {
  BidiStreamRequestSchema,
  ClientStreamRequestSchema,
  type Error as ConformanceError,
  type ConformancePayload,
  ConformancePayload_ConnectGetInfoSchema,
  type ConformancePayload_RequestInfo,
  ConformancePayload_RequestInfoSchema,
  ConformancePayloadSchema,
  ConformanceService,
  file_connectrpc_conformance_v1_service,
  type Header,
  HeaderSchema,
  IdempotentUnaryRequestSchema,
  ServerStreamRequestSchema,
  type StreamResponseDefinition,
  UnaryRequestSchema,
  type UnaryResponseDefinition,
} from "../../gen/connectrpc/conformance/v1/service_pb.ts";

export interface ConformanceServiceRoutes {
  /** ConformanceService; `Unimplemented` is left out on purpose, so the router answers it. */
  readonly implementation: Partial<ServiceImpl<typeof ConformanceService>>;
  readonly service: typeof ConformanceService;
  /**
   * The messages packed into google.protobuf.Any by this service (every request type, echoed back)
   * or by the test cases (error details), which the JSON codec must know to read and write them.
   */
  readonly registry: Registry;
}

/**
 * connectrpc.conformance.v1.ConformanceService as the suite's docs/testing_servers.md and the
 * comments in service.proto describe it: every call echoes what the server observed (headers,
 * timeout, the requests, GET query parameters) and answers with the headers, trailers, data, delay
 * or error the request asks for. It is only a puppet: what the suite tests is the stack around it.
 */
export function createConformanceService(): ConformanceServiceRoutes {
  const implementation: ConformanceServiceRoutes["implementation"] = {
    unary: (req, ctx) => unaryAnswer(req.responseDefinition, [anyPack(UnaryRequestSchema, req)], ctx),
    idempotentUnary: (req, ctx) =>
      unaryAnswer(req.responseDefinition, [anyPack(IdempotentUnaryRequestSchema, req)], ctx),
    async clientStream(requests, ctx) {
      let definition: UnaryResponseDefinition | undefined;
      const received: Any[] = [];
      for await (const req of requests) {
        // Only the first message carries the definition.
        if (received.length === 0) definition = req.responseDefinition;
        received.push(anyPack(ClientStreamRequestSchema, req));
      }
      return unaryAnswer(definition, received, ctx);
    },
    async *serverStream(req, ctx) {
      const definition = req.responseDefinition;
      const received = [anyPack(ServerStreamRequestSchema, req)];
      if (definition === undefined) return;
      appendHeaders(ctx.responseHeader, definition.responseHeaders);
      appendHeaders(ctx.responseTrailer, definition.responseTrailers);
      yield* streamAnswer(definition, 0, requestInfo(ctx, received), ctx);
    },
    async *bidiStream(requests, ctx) {
      let definition: StreamResponseDefinition | undefined;
      let fullDuplex = false;
      let sent = 0;
      let received: Any[] = [];
      let first = true;
      for await (const req of requests) {
        received.push(anyPack(BidiStreamRequestSchema, req));
        if (first) {
          first = false;
          definition = req.responseDefinition;
          fullDuplex = req.fullDuplex;
          if (definition !== undefined) {
            appendHeaders(ctx.responseHeader, definition.responseHeaders);
            appendHeaders(ctx.responseTrailer, definition.responseTrailers);
          }
        }
        if (!fullDuplex) continue;
        // Full duplex: one answer per request, until the answers run out.
        if (definition === undefined || sent >= definition.responseData.length) break;
        // The first answer echoes everything; later ones only the requests since the last answer.
        const info =
          sent === 0
            ? requestInfo(ctx, received)
            : create(ConformancePayload_RequestInfoSchema, { requests: received });
        await delay(definition.responseDelayMs, ctx.signal);
        yield { payload: payload(definition.responseData[sent], info) };
        sent++;
        received = [];
      }
      if (definition === undefined) return;
      // Half duplex (nothing sent yet), or full duplex with more answers than requests.
      yield* streamAnswer(definition, sent, requestInfo(ctx, received), ctx);
    },
  };
  return {
    implementation,
    service: ConformanceService,
    registry: createRegistry(file_connectrpc_conformance_v1_service),
  };
}

/** Unary and client-stream answers: an error at once, or the payload after the delay. */
async function unaryAnswer(
  definition: UnaryResponseDefinition | undefined,
  received: Any[],
  ctx: HandlerContext,
): Promise<{ payload: ConformancePayload }> {
  const info = requestInfo(ctx, received);
  if (definition === undefined) return { payload: payload(undefined, info) };
  appendHeaders(ctx.responseHeader, definition.responseHeaders);
  appendHeaders(ctx.responseTrailer, definition.responseTrailers);
  if (definition.response.case === "error") throw connectErrorFrom(definition.response.value, info);
  await delay(definition.responseDelayMs, ctx.signal);
  return { payload: payload(definition.response.value, info) };
}

/**
 * The remaining answers of a stream from answer `from` on, each after the delay; the first one
 * carries `info`. Then the error, if one is asked for, with `info` in its details when no answer
 * was sent at all.
 */
async function* streamAnswer(
  definition: StreamResponseDefinition,
  from: number,
  info: ConformancePayload_RequestInfo,
  ctx: HandlerContext,
): AsyncGenerator<{ payload: ConformancePayload }> {
  for (let i = from; i < definition.responseData.length; i++) {
    await delay(definition.responseDelayMs, ctx.signal);
    yield { payload: payload(definition.responseData[i], i === 0 ? info : undefined) };
  }
  if (definition.error !== undefined) {
    throw connectErrorFrom(definition.error, definition.responseData.length === 0 ? info : undefined);
  }
}

function payload(data: Uint8Array | undefined, info: ConformancePayload_RequestInfo | undefined) {
  return create(ConformancePayloadSchema, { data: data ?? new Uint8Array(0), requestInfo: info });
}

/** What the server observed of the call: headers, timeout, requests, and a GET's query. */
function requestInfo(ctx: HandlerContext, requests: Any[]): ConformancePayload_RequestInfo {
  const timeoutMs = ctx.timeoutMs();
  const info = create(ConformancePayload_RequestInfoSchema, {
    requestHeaders: headersOf(ctx.requestHeader),
    requests,
    ...(timeoutMs === undefined ? {} : { timeoutMs: BigInt(timeoutMs) }),
  });
  if (ctx.requestMethod === "GET") {
    const query = new URL(ctx.url).searchParams;
    const queryParams = new Headers();
    for (const [name, value] of query) queryParams.append(name, value);
    info.connectGetInfo = create(ConformancePayload_ConnectGetInfoSchema, {
      queryParams: headersOf(queryParams),
    });
  }
  return info;
}

function headersOf(headers: Headers): Header[] {
  const result: Header[] = [];
  headers.forEach((value, name) => {
    result.push(create(HeaderSchema, { name, value: [value] }));
  });
  return result;
}

function appendHeaders(target: Headers, headers: Header[]): void {
  for (const { name, value } of headers) for (const v of value) target.append(name, v);
}

/**
 * The error the test case asks for. Its details are already google.protobuf.Any, so they go out
 * as they came (type name and bytes); the request info is appended as the suite expects.
 */
function connectErrorFrom(error: ConformanceError, info: ConformancePayload_RequestInfo | undefined) {
  const connectError = new ConnectError(error.message ?? "", error.code as number as Code);
  for (const detail of error.details) {
    connectError.details.push({
      type: detail.typeUrl.slice(detail.typeUrl.lastIndexOf("/") + 1),
      value: detail.value,
    });
  }
  if (info !== undefined)
    connectError.details.push({ desc: ConformancePayload_RequestInfoSchema, value: info });
  return connectError;
}

/** Waits `ms`, or rejects with the call's abort reason (deadline, cancellation) if that comes first. */
function delay(ms: number, signal: AbortSignal): Promise<void> {
  if (ms <= 0) return Promise.resolve();
  if (signal.aborted) return Promise.reject(ConnectError.from(signal.reason));
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(ConnectError.from(signal.reason));
    };
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

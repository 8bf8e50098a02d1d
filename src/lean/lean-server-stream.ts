import * as http2 from "node:http2";
import {
  create,
  type DescMessage,
  type DescMethodServerStreaming,
  type MessageShape,
} from "@bufbuild/protobuf";
import {
  Code,
  ConnectError,
  type ContextValues,
  type Interceptor,
  type MethodImpl,
  type StreamRequest,
  type StreamResponse,
} from "@connectrpc/connect";
import { createAsyncIterable } from "@connectrpc/connect/protocol";
import { headerGrpcStatus, setTrailerStatus } from "@connectrpc/connect/protocol-grpc";
import { awaitDrain } from "../http/await-drain.ts";
import { handlerContextOf, intercepted } from "./handler-context.ts";
import { createResponseHeaders } from "./response-headers.ts";

/** One server-streaming method as the service implements it. */
export interface ServerStreamMethodImpl {
  readonly method: DescMethodServerStreaming;
  readonly impl: MethodImpl<DescMethodServerStreaming<DescMessage, DescMessage>>;
}

/** A decoded server-streaming gRPC call, ready for the interceptors and the implementation. */
export interface ServerStreamCall {
  readonly target: ServerStreamMethodImpl;
  readonly message: MessageShape<DescMessage>;
  readonly url: string;
  readonly header: Headers;
  readonly contextValues: ContextValues;
  readonly signal: AbortSignal;
  readonly deadline: number | undefined;
  /** Serializes one response message (the lean binary encoder, or connect's serialization). */
  readonly encode: (message: MessageShape<DescMessage>) => Uint8Array;
  /** The stream is reset when its reader took nothing for this long (STREAM_WRITE_TIMEOUT_MS). */
  readonly writeTimeoutMs: number;
}

/**
 * Serves a server-streaming gRPC call on the raw http2 stream: the same interceptors and
 * implementation as connect-node's handler (a StreamRequest in, a StreamResponse out, the same
 * HandlerContext), with each message written as one gRPC frame as it comes, under HTTP/2 flow
 * control (a reader that stops reading stops the writes, and the implementation's own buffer
 * decides what then; one that takes nothing for `writeTimeoutMs` has its stream reset with
 * ENHANCE_YOUR_CALM, which gRPC clients read as resource_exhausted), and the status in the
 * trailers. connect-node's streaming pipeline (a chain of async generators per message) cost
 * several times the work of the message itself; the figures are in docs/performance.md.
 */
export async function serveServerStream(
  stream: http2.ServerHttp2Stream,
  call: ServerStreamCall,
  interceptors: readonly Interceptor[],
): Promise<void> {
  const { target } = call;
  const header = createResponseHeaders();
  const trailer = createResponseHeaders();
  const last = async (req: StreamRequest): Promise<StreamResponse> => {
    const context = handlerContextOf(req, {
      method: target.method,
      requestMethod: "POST",
      protocolName: "grpc",
      url: call.url,
      deadline: call.deadline,
      responseHeader: header,
      responseTrailer: trailer,
    });
    let input: MessageShape<DescMessage> | undefined;
    for await (const message of req.message) input = message;
    const outputs = target.impl(input as MessageShape<DescMessage>, context);
    return {
      stream: true,
      service: req.service,
      method: target.method,
      header,
      trailer,
      message: completed(target.method.output, outputs),
    };
  };
  const next = intercepted(interceptors, last as unknown as Parameters<Interceptor>[0]);
  const request: StreamRequest = {
    stream: true,
    service: target.method.parent,
    method: target.method,
    requestMethod: "POST",
    url: call.url,
    signal: call.signal,
    header: call.header,
    contextValues: call.contextValues,
    message: createAsyncIterable([call.message]),
  };
  let res: StreamResponse;
  try {
    res = (await next(request)) as StreamResponse;
  } catch (error) {
    // Nothing sent yet: a trailers-only answer.
    respond(stream, res0Headers(header), trailersOf(trailer, error), true);
    return;
  }
  const messages = res.message[Symbol.asyncIterator]();
  // The headers go with the first message (or the end), as connect sends them: the
  // implementation may set some while it makes its first message.
  let step: IteratorResult<unknown> = { done: true, value: undefined };
  let failure: unknown;
  try {
    step = await messages.next();
  } catch (error) {
    failure = error;
  }
  // Headers, then the messages, then the trailers, in frames of their own (a gRPC client reads
  // metadata in the headers frame as headers, even when an error follows at once).
  if (!respond(stream, res0Headers(res.header), undefined, false)) {
    await messages.return?.();
    return;
  }
  try {
    while (failure === undefined && step.done !== true) {
      if (stream.destroyed || stream.closed) break;
      const bytes = call.encode(step.value as MessageShape<DescMessage>);
      const frame = Buffer.allocUnsafe(5 + bytes.byteLength);
      frame[0] = 0;
      frame.writeUInt32BE(bytes.byteLength, 1);
      frame.set(bytes, 5);
      if (!stream.write(frame)) {
        const outcome = await awaitDrain(stream, call.writeTimeoutMs);
        if (outcome === "stalled") {
          // Trailers would queue behind the data the reader does not take: a reset reaches it.
          stream.close(http2.constants.NGHTTP2_ENHANCE_YOUR_CALM);
        }
        if (outcome !== "drained") break;
      }
      step = await messages.next();
    }
  } catch (error) {
    failure = error;
  } finally {
    // The client went away (or the stream broke): the implementation lets go of what it holds.
    if (stream.destroyed || stream.closed) await messages.return?.();
  }
  if (stream.destroyed || stream.closed) return;
  const trailers = trailersOf(res.trailer, failure);
  try {
    stream.once("wantTrailers", () => stream.sendTrailers(trailers));
    stream.end();
  } catch {
    // Reset in between: nobody to tell.
  }
}

/** Response headers of a gRPC answer: what the interceptors set, and the content type. */
function res0Headers(header: Headers): Record<string, string> {
  const out: Record<string, string> = { ":status": "200" };
  header.forEach((value, key) => {
    out[key] = value;
  });
  out["content-type"] = "application/grpc+proto";
  return out;
}

/** The trailers: grpc-status 0 unless `error`, then its status, message, details and metadata. */
function trailersOf(trailer: Headers, error: unknown): Record<string, string> {
  const status = new Headers({ [headerGrpcStatus]: "0" });
  trailer.forEach((value, key) => {
    status.set(key, value);
  });
  if (error !== undefined) {
    const e =
      error instanceof ConnectError
        ? error
        : new ConnectError("internal error", Code.Internal, undefined, undefined, error);
    // Status, message, details, and the error's metadata (a cursor to resume after, say).
    setTrailerStatus(status, e);
  }
  const out: Record<string, string> = {};
  status.forEach((value, key) => {
    out[key] = value;
  });
  return out;
}

/** Sends the headers (with the trailers at once, for a trailers-only answer); false when the stream is gone. */
function respond(
  stream: http2.ServerHttp2Stream,
  headers: Record<string, string>,
  trailers: Record<string, string> | undefined,
  end: boolean,
): boolean {
  if (stream.destroyed || stream.closed) return false;
  try {
    if (end && trailers !== undefined) {
      // gRPC's Trailers-Only: the status travels with the headers.
      stream.respond({ ...headers, ...trailers }, { endStream: true });
      return false;
    }
    stream.respond(headers, { waitForTrailers: true });
    return true;
  } catch {
    return false;
  }
}

/** The implementation's answers as messages (implementations may yield init objects). */
async function* completed(
  schema: DescMessage,
  outputs: AsyncIterable<unknown>,
): AsyncGenerator<MessageShape<DescMessage>> {
  for await (const output of outputs) {
    yield (
      (output as { $typeName?: string }).$typeName === schema.typeName
        ? output
        : create(schema, output as never)
    ) as MessageShape<DescMessage>;
  }
}

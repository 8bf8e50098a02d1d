import type * as http from "node:http";
import type * as http2 from "node:http2";
import type { Readable } from "node:stream";
import type { DescMessage, JsonReadOptions, JsonWriteOptions, MessageShape } from "@bufbuild/protobuf";
import { base64Decode } from "@bufbuild/protobuf/wire";
import { MethodOptions_IdempotencyLevel } from "@bufbuild/protobuf/wkt";
import {
  Code,
  ConnectError,
  type ContextValues,
  createContextValues,
  type Interceptor,
  type ServiceImplSpec,
} from "@connectrpc/connect";
import {
  type Compression,
  createMethodSerializationLookup,
  type MethodSerializationLookup,
} from "@connectrpc/connect/protocol";
import { compressionBrotli, compressionGzip } from "@connectrpc/connect-node";
import { clampDeadlineHeaders } from "../rpc/deadline.ts";
import { unknownKeyMessage } from "../rpc/decode-errors.ts";
import { type BinaryEncoder, createBinaryEncoder } from "./binary-encoder.ts";
import { readBody } from "./body-reader.ts";
import { createUnaryInvoker, type UnaryInvoker, type UnaryMethodImpl } from "./invoke-unary.ts";
import { createJsonEncoder, type JsonEncoder } from "./json-encoder.ts";
import { type ServerStreamMethodImpl, serveServerStream } from "./lean-server-stream.ts";
import { createRequestHeaders } from "./request-headers.ts";
import { createResponseHeaders } from "./response-headers.ts";
import {
  type Answer,
  GRPC_OK_TRAILERS,
  getFormatOf,
  layOutAnswer,
  type Negotiated,
  negotiateCompression,
  postFormatOf,
  timeoutOf,
  unwrapEnvelope,
  type WireFormat,
} from "./unary-protocols.ts";

/** connect-node's adapter accepts these, in this order of preference; so does the lean path. */
const COMPRESSIONS: Compression[] = [compressionGzip, compressionBrotli];
/** connect's default: smaller answers are not worth compressing. */
const COMPRESS_MIN_BYTES = 1024;

export interface LeanUnaryOptions {
  /** The services, as connect's router holds them (createServiceImplSpec). */
  readonly services: readonly ServiceImplSpec[];
  /** The interceptors connect-node's adapter runs, outermost first. */
  readonly interceptors: readonly Interceptor[];
  readonly jsonOptions?: Partial<JsonReadOptions & JsonWriteOptions>;
  readonly readMaxBytes: number;
  /** A server stream whose reader took nothing for this long is reset (STREAM_WRITE_TIMEOUT_MS). */
  readonly streamWriteTimeoutMs: number;
  /**
   * The context values a call starts with, as the adapter's `contextValues` option makes them: a
   * new object for every call (the lean path keeps the call's own state in it, see invoke-unary).
   */
  readonly contextValues?: (remoteAddress: string | undefined) => ContextValues;
  /** Told of each request refused because its message could not be decoded. */
  readonly onRejected?: (reason: "decode_error") => void;
}

export interface LeanUnary {
  /** Serves an HTTP/1.1 request when it is a unary call the lean path takes; false otherwise. */
  http1(req: http.IncomingMessage, res: http.ServerResponse): boolean;
  /** Serves an HTTP/2 stream when it is a unary call the lean path takes; false otherwise. */
  http2(stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders): boolean;
}

/** How a method's messages are read and written, computed once. */
interface Codec {
  readonly serialization: MethodSerializationLookup<DescMessage, DescMessage>;
  /** The answer's encoders, faster than connect's serialization, which they fall back to. */
  readonly binaryEncoder: BinaryEncoder | undefined;
  readonly jsonEncoder: JsonEncoder | undefined;
  readonly sideEffectFree: boolean;
  /** The message of invalid_argument for input that is not a message of the input type. */
  readonly undecodable: string;
  /** The request's type, for naming a misspelt key's fields. */
  readonly input: DescMessage;
}

/** A unary method with what its calls need. */
interface Target extends UnaryMethodImpl, Codec {
  /** Runs a call through the interceptors to the implementation. */
  readonly invoke: UnaryInvoker;
}

/** A server-streaming method with what its calls need. */
interface StreamTarget extends ServerStreamMethodImpl, Codec {}

/** A request the lean path has taken: where it goes and how it is encoded. */
interface Route<T extends Codec = Target> {
  readonly target: T;
  readonly format: WireFormat;
  readonly compression: Negotiated;
  readonly timeoutMs: number | undefined;
  /** Connect GET: the message from the query (`message`, `base64`); undefined for POST. */
  readonly query: URLSearchParams | undefined;
}

/**
 * Unary calls served straight from node:http and the raw http2 stream API, running the same
 * service implementations behind the same interceptors as connect-node's handlers.
 *
 * connect-node's per-call machinery (web Headers copies, several linked AbortControllers and the
 * DOMException each abort builds, async-iterable pipelines for a one-message body, the http2
 * compatibility layer) costs several times the work of the call itself. This path reads the body
 * into one buffer, decodes, runs the interceptors and the implementation, and writes one answer.
 * It covers the Connect protocol (JSON and binary, POST and GET), gRPC (HTTP/2) and gRPC-Web
 * with either codec and gzip, brotli or identity; anything it does not recognise (streaming
 * methods, other content types, unknown encodings, malformed deadlines) returns false and goes
 * to connect-node, which answers it as before. Errors, limits, deadlines, headers and trailers
 * follow connect's handlers, whose own helpers lay out the answers.
 */
export function createLeanUnary(options: LeanUnaryOptions): LeanUnary {
  const { interceptors, jsonOptions, readMaxBytes } = options;
  const contextValues = options.contextValues ?? (() => createContextValues());
  const onRejected = options.onRejected ?? (() => {});
  const targets = new Map<string, Target>();
  /** Server streams, served lean over gRPC (HTTP/2) only; the other protocols go to connect-node. */
  const streamTargets = new Map<string, StreamTarget>();
  for (const service of options.services) {
    for (const spec of Object.values(service.methods)) {
      if (spec.kind !== "unary" && spec.kind !== "server_streaming") continue;
      const codec: Codec = {
        serialization: createMethodSerializationLookup(spec.method, undefined, jsonOptions, {
          readMaxBytes,
          writeMaxBytes: 0xffffffff,
        }),
        binaryEncoder: createBinaryEncoder(spec.method.output),
        jsonEncoder: createJsonEncoder(spec.method.output, jsonOptions),
        sideEffectFree: spec.method.idempotency === MethodOptions_IdempotencyLevel.NO_SIDE_EFFECTS,
        undecodable: `the request could not be decoded as a ${spec.method.input.typeName} message`,
        input: spec.method.input,
      };
      const path = `/${spec.method.parent.typeName}/${spec.method.name}`;
      if (spec.kind === "unary") {
        const unary: UnaryMethodImpl = { method: spec.method, impl: spec.impl as UnaryMethodImpl["impl"] };
        targets.set(path, { ...unary, ...codec, invoke: createUnaryInvoker(unary, interceptors) });
      } else {
        streamTargets.set(path, {
          method: spec.method,
          impl: spec.impl as ServerStreamMethodImpl["impl"],
          ...codec,
        });
      }
    }
  }

  function route(
    method: string | undefined,
    path: string,
    headers: http.IncomingHttpHeaders,
  ): Route | undefined {
    const q = path.indexOf("?");
    const target = targets.get(q < 0 ? path : path.slice(0, q));
    if (target === undefined) return undefined;
    let format: WireFormat | undefined;
    let query: URLSearchParams | undefined;
    let getCompression: string | null | undefined;
    if (method === "POST") {
      format = postFormatOf(headers["content-type"]);
    } else if (method === "GET" && target.sideEffectFree && q >= 0) {
      query = new URLSearchParams(path.slice(q + 1));
      format = getFormatOf(query.get("encoding"));
      getCompression = query.get("compression");
    }
    if (format === undefined) return undefined;
    const compression = negotiateCompression(format, COMPRESSIONS, headers, getCompression);
    if (compression === undefined) return undefined;
    clampDeadlineHeaders(headers);
    const timeoutMs = timeoutOf(format, headers);
    if (timeoutMs === null) return undefined;
    return { target, format, compression, timeoutMs, query };
  }

  /**
   * Decodes the request's message; a failure is the caller's answer, without running the call.
   * Only a compressed body makes it wait (for the decompression).
   */
  function decode(
    route: Route<Codec>,
    body: Uint8Array,
  ): MessageShape<DescMessage> | Promise<MessageShape<DescMessage>> {
    const { format, compression } = route;
    let bytes = body;
    let compressed = false;
    try {
      if (format.protocol === "connect") {
        if (route.query !== undefined) bytes = messageFromQuery(route.query);
        compressed = compression.request !== null;
      } else {
        const envelope = unwrapEnvelope(body, readMaxBytes);
        bytes = envelope.data;
        if ((envelope.flags & 0b00000001) !== 0) {
          if (compression.request === null) {
            throw new ConnectError(
              "received compressed envelope, but do not know how to decompress",
              Code.Internal,
            );
          }
          compressed = true;
        }
      }
      if (!compressed) return route.target.serialization.getI(format.binary).parse(bytes);
    } catch (error) {
      throw decodeError(error, route);
    }
    return decompressAndParse(route, bytes);
  }

  async function decompressAndParse(
    route: Route<Codec>,
    bytes: Uint8Array,
  ): Promise<MessageShape<DescMessage>> {
    try {
      const plain = await (route.compression.request as Compression).decompress(bytes, readMaxBytes);
      return route.target.serialization.getI(route.format.binary).parse(plain);
    } catch (error) {
      throw decodeError(error, route);
    }
  }

  /**
   * connect's answer to input it cannot decode, with the service's corrections (see
   * src/rpc/decode-errors.ts, which makes the same ones on connect-node's path): bad protobuf
   * bytes and broken compressed bodies are the caller's fault, invalid_argument, not internal.
   */
  function decodeError(error: unknown, route: Route<Codec>): ConnectError {
    const e = ConnectError.from(error, Code.Internal);
    const text = e.rawMessage;
    if (
      e.code === Code.Internal &&
      (text.startsWith("parse binary") || text.startsWith("decompression failed"))
    ) {
      onRejected("decode_error");
      return new ConnectError(route.target.undecodable, Code.InvalidArgument);
    }
    if (e.code === Code.InvalidArgument && text.startsWith("cannot decode ")) {
      onRejected("decode_error");
      // A snippet of the body quoted mid-surrogate cannot go into a gRPC trailer.
      if (route.format.protocol !== "connect" && !text.isWellFormed()) {
        return new ConnectError(route.target.undecodable, Code.InvalidArgument);
      }
      const clearer = unknownKeyMessage(text, route.target.input);
      if (clearer !== undefined) return new ConnectError(clearer, Code.InvalidArgument);
    }
    return e;
  }

  /** Runs the call from its body to its answer; never throws. */
  async function answer(
    route: Route,
    body: Uint8Array | ConnectError,
    call: Call,
    signal: AbortSignal,
  ): Promise<Answer> {
    const { format } = route;
    const layout = {
      format,
      compression: route.compression.response,
      compressMinBytes: COMPRESS_MIN_BYTES,
      jsonOptions,
    };
    let message: MessageShape<DescMessage>;
    try {
      if (body instanceof ConnectError) throw body;
      const decoded = decode(route, body);
      message = decoded instanceof Promise ? await decoded : decoded;
    } catch (error) {
      const refused = error instanceof ConnectError ? error : ConnectError.from(error);
      return layOutAnswer(layout, {
        error: refused,
        header: createResponseHeaders(),
        trailer: createResponseHeaders(),
      });
    }
    const outcome = await route.target.invoke({
      message,
      protocolName: format.protocolName,
      requestMethod: call.method,
      url: call.url,
      header: createRequestHeaders(call.headers),
      contextValues: contextValues(call.remoteAddress),
      signal,
      deadline: route.timeoutMs === undefined ? undefined : performance.now() + route.timeoutMs,
    });
    let bytes: Uint8Array | undefined;
    let error = outcome.error;
    if (outcome.error === undefined) {
      try {
        bytes = encodeAnswer(route.target, format.binary, outcome.message);
      } catch (e) {
        error = ConnectError.from(e, Code.Internal);
      }
    }
    try {
      const laid = layOutAnswer(layout, {
        message: bytes,
        error,
        header: outcome.header,
        trailer: outcome.trailer,
      });
      return laid instanceof Promise ? await laid : laid;
    } catch (e) {
      // An error connect could not serialize either (its JSON, say): a bare internal.
      return layOutAnswer(layout, {
        error: new ConnectError("internal error", Code.Internal, undefined, undefined, e),
        header: createResponseHeaders(),
        trailer: createResponseHeaders(),
      });
    }
  }

  /**
   * One unary call in flight, from its request to its answer.
   *
   * A stream keeps its listeners until its answer has gone out, and with them whatever they
   * hold. For HTTP/2 that is the end of the event loop's turn, after every other request read in
   * that turn has been answered too, so under load nearly everything a call's listeners hold
   * lives long enough for the garbage collector to copy it and then promote it: most of the
   * collector's work per call. The listeners therefore hold this object alone (and the body
   * reader), and it lets go of the request, its route, its signal and its writer once the answer
   * is written.
   */
  class Exchange {
    #route: Route | undefined;
    #call: Call | undefined;
    #write: ((answer: Answer) => void) | undefined;
    #controller: AbortController | undefined = new AbortController();
    #timer: NodeJS.Timeout | undefined;

    constructor(route: Route, call: Call, write: (answer: Answer) => void) {
      this.#route = route;
      this.#call = call;
      this.#write = write;
    }

    /**
     * Reads the body (none for GET) and answers. Bodies are bounded: over the limit the caller is
     * answered at once and the rest is read and dropped, so the connection stays usable.
     */
    serve(source: Readable, bodyDone: boolean, lengthHeader: string | undefined): void {
      if (bodyDone) {
        source.resume();
        this.start(NO_BODY);
        return;
      }
      const connect = (this.#route as Route).format.protocol === "connect";
      readBody(source, { connect, readMaxBytes, lengthHeader }, (body) => this.start(body));
    }

    start(body: Uint8Array | ConnectError): void {
      const route = this.#route;
      const call = this.#call;
      const controller = this.#controller;
      if (route === undefined || call === undefined || controller === undefined) return;
      if (route.timeoutMs !== undefined) {
        if (route.timeoutMs <= 0) this.expire();
        else this.#timer = setTimeout(() => this.expire(), route.timeoutMs);
      }
      answer(route, body, call, controller.signal).then(
        (result) => this.finish(result),
        (error: unknown) =>
          // answer() lays out every error itself; this is a last resort so no call hangs.
          this.finish({
            status: 500,
            headers: { "content-type": "text/plain" },
            body: Buffer.from(String(ConnectError.from(error).code)),
          }),
      );
    }

    expire(): void {
      this.#controller?.abort(new ConnectError("the operation timed out", Code.DeadlineExceeded));
    }

    /** The client went away: a call not yet answered is cancelled. */
    gone(): void {
      this.#controller?.abort(new ConnectError("the client went away", Code.Canceled));
    }

    finish(result: Answer): void {
      const write = this.#write;
      if (write === undefined) return;
      clearTimeout(this.#timer);
      this.#route = undefined;
      this.#call = undefined;
      this.#write = undefined;
      this.#controller = undefined;
      this.#timer = undefined;
      write(result);
    }
  }

  /** A server-streaming gRPC call the lean path takes (binary gRPC, a valid deadline), or undefined. */
  function streamRoute(method: string | undefined, path: string, headers: http.IncomingHttpHeaders) {
    const target = streamTargets.get(path);
    if (target === undefined || method !== "POST") return undefined;
    const format = postFormatOf(headers["content-type"]);
    if (format === undefined || format.protocol !== "grpc" || !format.binary) return undefined;
    const compression = negotiateCompression(format, COMPRESSIONS, headers, undefined);
    if (compression === undefined) return undefined;
    clampDeadlineHeaders(headers);
    const timeoutMs = timeoutOf(format, headers);
    if (timeoutMs === null) return undefined;
    const found: Route<StreamTarget> = { target, format, compression, timeoutMs, query: undefined };
    return found;
  }

  function serveStream(
    found: Route<StreamTarget>,
    stream: http2.ServerHttp2Stream,
    headers: http2.IncomingHttpHeaders,
    url: string,
  ): void {
    const controller = new AbortController();
    let timer: NodeJS.Timeout | undefined;
    stream.on("error", () => {});
    stream.once("close", () => {
      clearTimeout(timer);
      controller.abort(new ConnectError("the client went away", Code.Canceled));
    });
    if (found.timeoutMs !== undefined) {
      const expire = () =>
        controller.abort(new ConnectError("the operation timed out", Code.DeadlineExceeded));
      if (found.timeoutMs <= 0) expire();
      else timer = setTimeout(expire, found.timeoutMs);
    }
    const deadline = found.timeoutMs === undefined ? undefined : performance.now() + found.timeoutMs;
    const { target } = found;
    const encode = (message: MessageShape<DescMessage>) =>
      target.binaryEncoder?.(message) ?? target.serialization.getO(true).serialize(message);
    const start = async (body: Uint8Array | ConnectError) => {
      let message: MessageShape<DescMessage>;
      try {
        if (body instanceof ConnectError) throw body;
        message = await decode(found, body);
      } catch (error) {
        const refused = error instanceof ConnectError ? error : ConnectError.from(error);
        const answer = await layOutAnswer(
          { format: found.format, compression: null, compressMinBytes: COMPRESS_MIN_BYTES, jsonOptions },
          { error: refused, header: createResponseHeaders(), trailer: createResponseHeaders() },
        );
        if (stream.destroyed || stream.closed) return;
        stream.respond(
          { ":status": answer.status, ...answer.headers, ...answer.trailers },
          { endStream: true },
        );
        return;
      }
      await serveServerStream(
        stream,
        {
          target,
          message,
          url,
          header: createRequestHeaders(headers),
          contextValues: contextValues(stream.session?.socket?.remoteAddress),
          signal: controller.signal,
          deadline,
          encode,
          writeTimeoutMs: options.streamWriteTimeoutMs,
        },
        interceptors,
      );
      clearTimeout(timer);
    };
    const run = (body: Uint8Array | ConnectError) => {
      start(body).catch(() => {
        if (!stream.destroyed) stream.close();
      });
    };
    if (stream.endAfterHeaders) run(NO_BODY);
    else readBody(stream, { connect: false, readMaxBytes, lengthHeader: headers["content-length"] }, run);
  }

  return {
    http1(req, res) {
      const found = route(req.method, req.url ?? "", req.headers);
      // gRPC needs HTTP/2 trailers; connect-node answers it on HTTP/1.1.
      if (found === undefined || found.format.protocol === "grpc") return false;
      const call: Call = {
        method: req.method as string,
        url: `http://${req.headers.host ?? "localhost"}${req.url}`,
        headers: req.headers,
        remoteAddress: req.socket.remoteAddress,
      };
      const exchange = new Exchange(found, call, (result) => {
        if (res.destroyed) return;
        res.writeHead(result.status, result.headers);
        res.end(result.body);
      });
      // A client that disconnects early makes Node destroy the request: nothing left to answer.
      req.on("error", ignore);
      res.on("close", () => exchange.gone());
      exchange.serve(req, req.complete, req.headers["content-length"]);
      return true;
    },

    http2(stream, headers) {
      // Browsers (CORS) are served by the request handler, where the CORS rules live.
      if (headers.origin !== undefined) return false;
      const method = headers[":method"];
      const path = headers[":path"] ?? "";
      const streaming = streamRoute(method, path, headers);
      if (streaming !== undefined) {
        serveStream(streaming, stream, headers, `http://${headers[":authority"] ?? "localhost"}${path}`);
        return true;
      }
      const found = route(method, path, headers);
      if (found === undefined) return false;
      const call: Call = {
        method: method as string,
        url: `http://${headers[":authority"] ?? "localhost"}${path}`,
        headers,
        remoteAddress: stream.session?.socket?.remoteAddress,
      };
      const exchange = new Exchange(found, call, (result) => {
        if (stream.destroyed || stream.closed) return;
        const trailers = result.trailers;
        try {
          stream.respond(
            { ":status": result.status, ...result.headers },
            trailers === undefined ? undefined : { waitForTrailers: true },
          );
          // "wantTrailers" comes once: a plain listener, without the wrapper `once` makes.
          if (trailers === GRPC_OK_TRAILERS) stream.on("wantTrailers", sendOkTrailers);
          else if (trailers !== undefined) stream.on("wantTrailers", () => stream.sendTrailers(trailers));
          stream.end(result.body);
        } catch {
          // The stream was reset between the check and the answer: nobody to answer.
        }
      });
      stream.on("error", ignore);
      stream.on("close", () => exchange.gone());
      exchange.serve(stream, stream.endAfterHeaders, headers["content-length"]);
      return true;
    },
  };
}

/** What a request and its transport tell a call. */
interface Call {
  readonly method: string;
  readonly url: string;
  readonly headers: http.IncomingHttpHeaders;
  readonly remoteAddress: string | undefined;
}

/** The body of a request that has none. */
const NO_BODY = new Uint8Array(0);

/** Errors of a request or stream whose call is answered (or cancelled) elsewhere. */
function ignore(): void {}

/** The "wantTrailers" listener of a bare gRPC success, shared by every such stream. */
function sendOkTrailers(this: http2.ServerHttp2Stream): void {
  this.sendTrailers(GRPC_OK_TRAILERS);
}

/** The answer's bytes: from the lean encoders, or connect's serialization where they step aside. */
function encodeAnswer(target: Target, binary: boolean, message: MessageShape<DescMessage>): Uint8Array {
  const fast = binary ? target.binaryEncoder?.(message) : target.jsonEncoder?.(message);
  if (fast !== undefined) return fast;
  return target.serialization.getO(binary).serialize(message);
}

/** A Connect GET request's message: the `message` parameter, base64url when `base64=1`. */
function messageFromQuery(query: URLSearchParams): Uint8Array {
  const message = query.get("message") ?? "";
  return query.get("base64") === "1" ? base64Decode(message) : new TextEncoder().encode(message);
}

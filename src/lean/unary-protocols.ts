import type { IncomingHttpHeaders } from "node:http";
import type { JsonWriteOptions } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import {
  type Compression,
  compressionNegotiate,
  mergeNonProtocolHeaders,
} from "@connectrpc/connect/protocol";
import {
  codeToHttpStatus,
  contentTypeUnaryJson,
  contentTypeUnaryProto,
  errorToJsonBytes,
  parseTimeout as parseConnectTimeout,
} from "@connectrpc/connect/protocol-connect";
import {
  contentTypeJson as grpcContentTypeJson,
  contentTypeProto as grpcContentTypeProto,
  parseTimeout as parseGrpcTimeout,
  setTrailerStatus,
} from "@connectrpc/connect/protocol-grpc";
import {
  contentTypeJson as grpcWebContentTypeJson,
  contentTypeProto as grpcWebContentTypeProto,
  trailerFlag,
  trailerSerialize,
} from "@connectrpc/connect/protocol-grpc-web";

/**
 * The wire formats of unary calls on the lean path: how a request is recognised from its HTTP
 * method and headers, and how an answer (a message or an error) is laid out for each protocol.
 * Each layout is the one connect-node's handlers produce, built from connect's own helpers, so
 * callers see the same bytes whichever path served them.
 */

export type Protocol = "connect" | "grpc" | "grpc-web";

/** How a request's body is framed and encoded, from its content type. */
export interface WireFormat {
  readonly protocol: Protocol;
  readonly binary: boolean;
  /** The protocol name connect gives the HandlerContext. */
  readonly protocolName: string;
}

const CONNECT_JSON: WireFormat = { protocol: "connect", binary: false, protocolName: "connect" };
const CONNECT_PROTO: WireFormat = { protocol: "connect", binary: true, protocolName: "connect" };
const GRPC_PROTO: WireFormat = { protocol: "grpc", binary: true, protocolName: "grpc" };
const GRPC_JSON: WireFormat = { protocol: "grpc", binary: false, protocolName: "grpc" };
const GRPC_WEB_PROTO: WireFormat = { protocol: "grpc-web", binary: true, protocolName: "grpc-web" };
const GRPC_WEB_JSON: WireFormat = { protocol: "grpc-web", binary: false, protocolName: "grpc-web" };

/**
 * Content types taken as they are sent by connect, gRPC and gRPC-Web clients. Variants (charset
 * parameters, other letter cases, gRPC-Web text) are rare and go to connect-node's handlers.
 */
const POST_FORMATS: ReadonlyMap<string | undefined, WireFormat> = new Map([
  ["application/json", CONNECT_JSON],
  ["application/proto", CONNECT_PROTO],
  ["application/grpc", GRPC_PROTO],
  ["application/grpc+proto", GRPC_PROTO],
  ["application/grpc+json", GRPC_JSON],
  ["application/grpc-web", GRPC_WEB_PROTO],
  ["application/grpc-web+proto", GRPC_WEB_PROTO],
  ["application/grpc-web+json", GRPC_WEB_JSON],
]);

/** The format of a POST request, when the lean path takes it. */
export function postFormatOf(contentType: string | undefined): WireFormat | undefined {
  return POST_FORMATS.get(contentType);
}

/** The format of a Connect GET request, from its `encoding` query parameter. */
export function getFormatOf(encoding: string | null): WireFormat | undefined {
  if (encoding === "json") return CONNECT_JSON;
  if (encoding === "proto") return CONNECT_PROTO;
  return undefined;
}

/** Request and response compression, as connect negotiates it. */
export interface Negotiated {
  readonly request: Compression | null;
  readonly response: Compression | null;
}

/**
 * The compressions of a call, negotiated as connect does from the same list; undefined when the
 * request's encoding is unknown (connect answers that, with the list it accepts).
 */
export function negotiateCompression(
  format: WireFormat,
  available: Compression[],
  headers: IncomingHttpHeaders,
  getCompression: string | null | undefined,
): Negotiated | undefined {
  const connect = format.protocol === "connect";
  const requested =
    getCompression !== undefined
      ? getCompression
      : headerValue(headers, connect ? "content-encoding" : "grpc-encoding");
  const acceptName = connect ? "accept-encoding" : "grpc-accept-encoding";
  const negotiated = compressionNegotiate(available, requested, headerValue(headers, acceptName), acceptName);
  return negotiated.error === undefined ? negotiated : undefined;
}

/**
 * The call's timeout in ms (undefined: none), or null when the header is malformed, which connect
 * answers with its own error.
 */
export function timeoutOf(format: WireFormat, headers: IncomingHttpHeaders): number | undefined | null {
  const parsed =
    format.protocol === "connect"
      ? parseConnectTimeout(headerValue(headers, "connect-timeout-ms"), Number.MAX_SAFE_INTEGER)
      : parseGrpcTimeout(headerValue(headers, "grpc-timeout"), Number.MAX_SAFE_INTEGER);
  return parsed.error === undefined ? parsed.timeoutMs : null;
}

function headerValue(headers: IncomingHttpHeaders, name: string): string | null {
  const value = headers[name];
  if (value === undefined) return null;
  return typeof value === "string" ? value : value.join(", ");
}

/** An answer ready for the wire: status, headers, body and (gRPC) trailers. */
export interface Answer {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: Uint8Array;
  /** Only gRPC sends HTTP trailers; the others carry them in headers or in the body. */
  readonly trailers?: Readonly<Record<string, string>>;
}

export interface AnswerOptions {
  readonly format: WireFormat;
  readonly compression: Compression | null;
  readonly compressMinBytes: number;
  readonly jsonOptions: Partial<JsonWriteOptions> | undefined;
}

/** A call's outcome as laid out: the serialized response or the error, and its metadata. */
export interface LaidOutcome {
  readonly message?: Uint8Array;
  readonly error?: ConnectError;
  readonly header: Headers;
  readonly trailer: Headers;
}

/**
 * Lays out a call's answer: `message` (the serialized response) or `error`, with the headers and
 * trailers the interceptors and the implementation set. The common answer (a message, no
 * trailers, nothing large enough to compress) is laid out at once; the rest waits for connect's
 * error serialization or compression.
 */
export function layOutAnswer(options: AnswerOptions, outcome: LaidOutcome): Answer | Promise<Answer> {
  return layOutPlainAnswer(options, outcome) ?? layOutAnyAnswer(options, outcome);
}

/**
 * The common answer, without a promise: a message and a bare success, with nothing to compress
 * (no compression, or a message under the threshold). undefined for any other answer.
 */
function layOutPlainAnswer(options: AnswerOptions, outcome: LaidOutcome): Answer | undefined {
  const { format, compression } = options;
  const { header, trailer, message } = outcome;
  if (outcome.error !== undefined || message === undefined) return undefined;
  if (compression !== null && message.byteLength >= options.compressMinBytes) return undefined;
  if (format.protocol === "connect") {
    header.set("content-type", format.binary ? contentTypeUnaryProto : contentTypeUnaryJson);
    const headers = withTrailersAsHeaders(header, trailer);
    headers["content-length"] = String(message.byteLength);
    return { status: 200, headers, body: message };
  }
  if (!isEmpty(trailer)) return undefined;
  header.set("content-type", grpcContentTypeOf(format));
  if (compression !== null) header.set("grpc-encoding", compression.name);
  const body = frame(0, message);
  if (format.protocol === "grpc") {
    return { status: 200, headers: flatten(header), body, trailers: GRPC_OK_TRAILERS };
  }
  // The status trailer of a bare success is always under the compression threshold.
  const framed = concat([body, frame(trailerFlag, GRPC_WEB_OK_TRAILER)]);
  const headers = flatten(header);
  headers["content-length"] = String(framed.byteLength);
  return { status: 200, headers, body: framed };
}

async function layOutAnyAnswer(options: AnswerOptions, outcome: LaidOutcome): Promise<Answer> {
  const { format, compression } = options;
  const { header, trailer, error } = outcome;
  if (format.protocol === "connect") {
    let status = 200;
    let body: Uint8Array;
    if (error === undefined) {
      header.set("content-type", format.binary ? contentTypeUnaryProto : contentTypeUnaryJson);
      body = outcome.message as Uint8Array;
    } else {
      status = codeToHttpStatus(error.code);
      header.set("content-type", contentTypeUnaryJson);
      if (!error.isWireError) mergeNonProtocolHeaders(header, error.metadata);
      body = errorToJsonBytes(error, options.jsonOptions);
    }
    if (compression !== null && body.byteLength >= options.compressMinBytes) {
      body = await compression.compress(body);
      header.set("content-encoding", compression.name);
    }
    const headers = withTrailersAsHeaders(header, trailer);
    headers["content-length"] = String(body.byteLength);
    return { status, headers, body };
  }
  header.set("content-type", grpcContentTypeOf(format));
  if (compression !== null) header.set("grpc-encoding", compression.name);
  // connect starts every gRPC trailer with a success status and overwrites it on error.
  const status = new Headers({ "grpc-status": "0" });
  trailer.forEach((value, key) => {
    status.set(key, value);
  });
  if (error !== undefined) setTrailerStatus(status, error);
  const frames: Uint8Array[] = [];
  if (error === undefined) frames.push(await envelope(0, outcome.message as Uint8Array, options));
  if (format.protocol === "grpc") {
    return { status: 200, headers: flatten(header), body: concat(frames), trailers: flatten(status) };
  }
  frames.push(await envelope(trailerFlag, trailerSerialize(status), options));
  const body = concat(frames);
  const headers = flatten(header);
  headers["content-length"] = String(body.byteLength);
  return { status: 200, headers, body };
}

/** The trailers of a bare gRPC success, one object for every such answer (it is only read). */
export const GRPC_OK_TRAILERS: Readonly<Record<string, string>> = Object.freeze({ "grpc-status": "0" });

/** The gRPC-Web trailer of a bare success, as trailerSerialize writes it. */
const GRPC_WEB_OK_TRAILER = trailerSerialize(new Headers({ "grpc-status": "0" }));

/** A gRPC length-prefixed message, compressed when it is large enough and compression is on. */
async function envelope(flags: number, data: Uint8Array, options: AnswerOptions): Promise<Uint8Array> {
  if (options.compression !== null && data.byteLength >= options.compressMinBytes) {
    return frame(flags | 0b00000001, await options.compression.compress(data));
  }
  return frame(flags, data);
}

/** A gRPC length-prefixed message: flags, a 4-byte big-endian length, the bytes. */
function frame(flags: number, bytes: Uint8Array): Uint8Array {
  const framed = Buffer.allocUnsafe(5 + bytes.byteLength);
  framed[0] = flags;
  framed.writeUInt32BE(bytes.byteLength, 1);
  framed.set(bytes, 5);
  return framed;
}

function grpcContentTypeOf(format: WireFormat): string {
  if (format.protocol === "grpc") return format.binary ? grpcContentTypeProto : grpcContentTypeJson;
  return format.binary ? grpcWebContentTypeProto : grpcWebContentTypeJson;
}

/**
 * A Connect unary answer's headers: its own, then its trailers as headers prefixed "trailer-"
 * (connect's trailerMux, without the copy of every header it makes).
 */
function withTrailersAsHeaders(header: Headers, trailer: Headers): Record<string, string> {
  const headers = flatten(header);
  trailer.forEach((value, key) => {
    const name = `trailer-${key}`;
    headers[name] = headers[name] === undefined ? value : `${headers[name]}, ${value}`;
  });
  return headers;
}

function isEmpty(headers: Headers): boolean {
  let empty = true;
  headers.forEach(() => {
    empty = false;
  });
  return empty;
}

function concat(frames: Uint8Array[]): Uint8Array {
  if (frames.length === 1) return frames[0] as Uint8Array;
  return Buffer.concat(frames);
}

function flatten(headers: Headers): Record<string, string> {
  const out: Record<string, string> = {};
  headers.forEach((value, key) => {
    out[key] = value;
  });
  return out;
}

/**
 * Splits a gRPC or gRPC-Web request body into its one message, with connect's errors for a body
 * that holds none, more than one, or an incomplete one. `flags` tells whether it is compressed.
 */
export function unwrapEnvelope(body: Uint8Array, readMaxBytes: number): { flags: number; data: Uint8Array } {
  if (body.byteLength === 0) {
    throw new ConnectError("protocol error: missing input message for unary method", Code.Unimplemented);
  }
  if (body.byteLength < 5)
    throw new ConnectError("protocol error: incomplete envelope", Code.InvalidArgument);
  const view = Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  const length = view.readUInt32BE(1);
  if (length > readMaxBytes) {
    throw new ConnectError(
      `message size ${length} is larger than configured readMaxBytes ${readMaxBytes}`,
      Code.ResourceExhausted,
    );
  }
  if (body.byteLength < 5 + length) {
    throw new ConnectError("protocol error: incomplete envelope", Code.InvalidArgument);
  }
  if (body.byteLength > 5 + length) {
    throw new ConnectError(
      "protocol error: received extra input message for unary method",
      Code.Unimplemented,
    );
  }
  return { flags: view[0] as number, data: view.subarray(5, 5 + length) };
}

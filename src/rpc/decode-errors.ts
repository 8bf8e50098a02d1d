import type { DescMessage } from "@bufbuild/protobuf";
import type { UniversalHandler, UniversalServerResponse } from "@connectrpc/connect/protocol";
import { quote } from "../domain/errors.ts";

/**
 * connect answers a request body it cannot decode (bad protobuf bytes, a truncated compressed
 * body) with `internal`, before any interceptor runs: the caller is told the server failed,
 * and nothing is logged or counted. These are the messages it uses for such input.
 */
const DECODE_FAILURES = [
  "parse binary",
  // connect-node leaves a truncated gzip or brotli body (Z_BUF_ERROR) as internal.
  "decompression failed",
  // Not "received compressed envelope, but do not know how to decompress": for a compressed frame
  // sent without grpc-encoding, the gRPC spec prescribes INTERNAL (the conformance suite checks).
];

/**
 * connect's JSON decoder already answers invalid_argument, with protobuf-es' message ("cannot
 * decode message X from JSON: ...", "cannot decode field X from JSON: ..."), which is kept: it is
 * short and names the field. It is still a request refused before the service, so it is counted.
 */
const JSON_DECODE_FAILURE = "cannot decode ";

/** protobuf-es' words for a JSON key the message has no field for. */
const UNKNOWN_KEY = /^cannot decode message ([\w.]{1,200}) from JSON: key "([^"\\]{1,64})" is unknown$/;

/**
 * protobuf-es' message for a misspelt key of the request (`{"typ":"transfer"}`) names its decoder
 * ("cannot decode message agent.v1.CreateAgentRequest from JSON: key "typ" is unknown"). A caller
 * needs the key, and the fields it could have meant: this says that, or undefined for any other.
 */
export function unknownKeyMessage(text: string, input: DescMessage): string | undefined {
  const found = UNKNOWN_KEY.exec(text);
  if (found === null) return undefined;
  const [, typeName, key] = found as unknown as [string, string, string];
  const fields =
    typeName === input.typeName ? `: its fields are ${input.fields.map((f) => f.jsonName).join(", ")}` : "";
  return `${quote(key)} is not a field of ${typeName.slice(typeName.lastIndexOf(".") + 1)}${fields}`;
}

const INTERNAL = "13";
const INVALID_ARGUMENT = "3";

/** Told of every request refused before reaching the service: decode errors, 404, 405, 415. */
export type RejectionSink = (
  reason: "decode_error" | "unknown_route" | "method_not_allowed" | "unsupported_media_type",
) => void;

/**
 * Wraps a connect universal handler so that undecodable input is answered `invalid_argument` on
 * every protocol (Connect's JSON error and HTTP 400, gRPC's trailers, gRPC-Web's trailer frame),
 * and every request refused before the service is counted. Only connect's own decode failures
 * are rewritten, never an error the service raised.
 */
export function withDecodeErrorsAsInvalidArgument(
  handler: UniversalHandler,
  onRejected: RejectionSink,
): UniversalHandler {
  const message = `the request could not be decoded as a ${handler.method.input.typeName} message`;
  const wrapped = async (req: Parameters<UniversalHandler>[0]): Promise<UniversalServerResponse> => {
    let res: UniversalServerResponse;
    try {
      res = await handler(req);
    } catch (error) {
      // See isUnencodableMessage: connect could not even start its answer.
      if (!isUnencodableMessage(error)) throw error;
      onRejected("decode_error");
      return grpcInvalidArgument(req.header.get("content-type") ?? "", message);
    }
    if (res.status === 405) onRejected("method_not_allowed");
    if (res.status === 415) {
      onRejected("unsupported_media_type");
      const sent = req.header.get("content-type");
      if (res.body === undefined && isHandMade(sent)) return unsupportedMediaType(sent);
    }
    if (res.body === undefined) return res;
    const contentType = res.header?.get("content-type") ?? "";
    if (
      (res.status === 500 || res.status === 400) &&
      contentType.startsWith("application/json") &&
      !res.header?.has("content-encoding")
    ) {
      return connectUnary(res, res.body, message, onRejected, handler.method.input);
    }
    if (contentType.startsWith("application/grpc-web"))
      return { ...res, body: grpcWebBody(res.body, message, onRejected) };
    if (contentType.startsWith("application/grpc"))
      return { ...res, body: grpcBody(res, res.body, message, onRejected) };
    return res;
  };
  return Object.assign(wrapped, handler);
}

/**
 * What a person's request carries when they forgot the content type: none, curl's `-d` default
 * (a form), or fetch's for a string body. Clients of a protocol send their own types, and for any
 * other type the protocols expect a bare 415 (the Connect conformance suite checks it).
 */
function isHandMade(contentType: string | null): boolean {
  if (contentType === null) return true;
  return /^(application\/x-www-form-urlencoded|multipart\/form-data|text\/plain)\s*(;|$)/i.test(contentType);
}

/**
 * connect answers a content type no protocol of the method serves with a bare 415. A person with
 * curl gets there by leaving out `-H 'content-type: application/json'`, so the answer says, as a
 * Connect error, what to send instead. Its code is `unknown`, what Connect clients make of a 415.
 */
function unsupportedMediaType(contentType: string | null): UniversalServerResponse {
  const got = contentType === null ? "no content-type" : `content-type ${quote(contentType)}`;
  const body = Buffer.from(
    JSON.stringify({
      code: "unknown",
      message: `${got}: a Connect call sends content-type application/json (JSON) or application/proto (binary), and gRPC and gRPC-Web their own`,
    }),
  );
  const header = new Headers({
    "content-type": "application/json",
    "content-length": String(body.byteLength),
  });
  return { status: 415, header, body: once(body) };
}

function isDecodeFailure(text: string): boolean {
  return DECODE_FAILURES.some((prefix) => text.startsWith(prefix));
}

/**
 * connect percent-encodes an error's message into grpc-message with encodeURIComponent, which
 * throws URIError on a lone UTF-16 surrogate. The service's own messages are made well-formed by
 * the error interceptor, so such a message is one connect wrote about undecodable input before
 * any interceptor ran: V8's JSON.parse message quotes a snippet of the body cut in the middle of
 * a surrogate pair, or protobuf-es quotes a short JSON string holding a lone surrogate escape.
 * connect then neither answers nor closes the call (the caller waits until a timeout, and a held
 * HTTP/2 stream stops the connection's other streams once its unread body fills the window).
 */
function isUnencodableMessage(error: unknown): boolean {
  return error instanceof URIError;
}

/** A gRPC or gRPC-Web answer with only the status: invalid_argument and `message`. */
function grpcInvalidArgument(contentType: string, message: string): UniversalServerResponse {
  const header = new Headers({ "content-type": contentType });
  const status = [`grpc-message: ${encodeURIComponent(message)}`, `grpc-status: ${INVALID_ARGUMENT}`];
  if (contentType.startsWith("application/grpc-web")) {
    const frame = trailerFrame(status);
    const text = contentType.startsWith("application/grpc-web-text");
    return { status: 200, header, body: once(text ? Buffer.from(frame.toString("base64")) : frame) };
  }
  const trailer = new Headers({
    "grpc-status": INVALID_ARGUMENT,
    "grpc-message": encodeURIComponent(message),
  });
  return { status: 200, header, trailer, body: once(new Uint8Array(0)) };
}

/** A gRPC-Web trailer frame (flag 0x80) holding `lines` as HTTP/1-style header lines. */
function trailerFrame(lines: readonly string[]): Buffer {
  const trailer = Buffer.from(lines.map((l) => `${l}\r\n`).join(""), "latin1");
  const frame = Buffer.alloc(5 + trailer.byteLength);
  frame[0] = 0x80;
  frame.writeUInt32BE(trailer.byteLength, 1);
  frame.set(trailer, 5);
  return frame;
}

async function connectUnary(
  res: UniversalServerResponse,
  body: AsyncIterable<Uint8Array>,
  message: string,
  onRejected: RejectionSink,
  input: DescMessage,
): Promise<UniversalServerResponse> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of body) chunks.push(chunk);
  const bytes = Buffer.concat(chunks);
  let error: { code?: string; message?: string };
  try {
    error = JSON.parse(bytes.toString("utf8")) as typeof error;
  } catch {
    return { ...res, body: once(bytes) };
  }
  if (error.code === "invalid_argument" && error.message?.startsWith(JSON_DECODE_FAILURE)) {
    onRejected("decode_error");
    const clearer = unknownKeyMessage(error.message, input);
    if (clearer === undefined) return { ...res, body: once(bytes) };
    const fixed = Buffer.from(JSON.stringify({ code: "invalid_argument", message: clearer }));
    res.header?.set("content-length", String(fixed.byteLength));
    return { ...res, body: once(fixed) };
  }
  if (error.code !== "internal" || !isDecodeFailure(error.message ?? ""))
    return { ...res, body: once(bytes) };
  onRejected("decode_error");
  const fixed = Buffer.from(JSON.stringify({ code: "invalid_argument", message }));
  res.header?.set("content-length", String(fixed.byteLength));
  return { ...res, status: 400, body: once(fixed) };
}

/** gRPC: the status travels in trailers, filled in while the body is produced. */
async function* grpcBody(
  res: UniversalServerResponse,
  body: AsyncIterable<Uint8Array>,
  message: string,
  onRejected: RejectionSink,
): AsyncIterable<Uint8Array> {
  const trailer = res.trailer;
  try {
    yield* body;
  } catch (error) {
    if (trailer === undefined || !isUnencodableMessage(error)) throw error;
    onRejected("decode_error");
    setInvalidArgument(trailer, message);
    return;
  }
  const status = trailer?.get("grpc-status");
  const text = decodeURIComponent(trailer?.get("grpc-message") ?? "");
  if (trailer === undefined) return;
  if (status === INVALID_ARGUMENT && text.startsWith(JSON_DECODE_FAILURE)) onRejected("decode_error");
  if (status !== INTERNAL || !isDecodeFailure(text)) return;
  onRejected("decode_error");
  setInvalidArgument(trailer, message);
}

function setInvalidArgument(trailer: Headers, message: string): void {
  trailer.set("grpc-status", INVALID_ARGUMENT);
  trailer.set("grpc-message", encodeURIComponent(message));
  trailer.delete("grpc-status-details-bin");
}

/** gRPC-Web: the status travels in the body's last frame (flag 0x80), as HTTP/1-style header lines. */
async function* grpcWebBody(
  body: AsyncIterable<Uint8Array>,
  message: string,
  onRejected: RejectionSink,
): AsyncIterable<Uint8Array> {
  // In the order connect writes trailer lines (a Headers object's: by name), so this answer is
  // byte for byte the one the lean path gives (src/lean/).
  const invalidArgument = [
    `grpc-message: ${encodeURIComponent(message)}`,
    `grpc-status: ${INVALID_ARGUMENT}`,
  ];
  try {
    for await (const chunk of body) {
      if (chunk.byteLength < 5 || ((chunk[0] ?? 0) & 0x80) === 0) {
        yield chunk;
        continue;
      }
      const text = Buffer.from(chunk.subarray(5)).toString("latin1");
      const lines = text.split("\r\n").filter((line) => line !== "");
      const field = (name: string) =>
        lines
          .find((l) => l.toLowerCase().startsWith(`${name}:`))
          ?.slice(name.length + 1)
          .trim();
      const status = field("grpc-status");
      const errorMessage = decodeURIComponent(field("grpc-message") ?? "");
      if (status === INVALID_ARGUMENT && errorMessage.startsWith(JSON_DECODE_FAILURE))
        onRejected("decode_error");
      if (status !== INTERNAL || !isDecodeFailure(errorMessage)) {
        yield chunk;
        continue;
      }
      onRejected("decode_error");
      const kept = lines.filter((l) => !/^grpc-(status|message|status-details-bin):/i.test(l));
      yield trailerFrame([...kept, ...invalidArgument].sort());
    }
  } catch (error) {
    // The trailer frame is made inside connect's body: no frame came, so this one ends the call.
    if (!isUnencodableMessage(error)) throw error;
    onRejected("decode_error");
    yield trailerFrame(invalidArgument);
  }
}

async function* once(bytes: Uint8Array): AsyncIterable<Uint8Array> {
  yield bytes;
}

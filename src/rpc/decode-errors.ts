import type { UniversalHandler, UniversalServerResponse } from "@connectrpc/connect/protocol";

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
    const res = await handler(req);
    if (res.status === 405) onRejected("method_not_allowed");
    if (res.status === 415) onRejected("unsupported_media_type");
    if (res.body === undefined) return res;
    const contentType = res.header?.get("content-type") ?? "";
    if (
      res.status === 500 &&
      contentType.startsWith("application/json") &&
      !res.header?.has("content-encoding")
    ) {
      return connectUnary(res, res.body, message, onRejected);
    }
    if (contentType.startsWith("application/grpc-web"))
      return { ...res, body: grpcWebBody(res.body, message, onRejected) };
    if (contentType.startsWith("application/grpc"))
      return { ...res, body: grpcBody(res, res.body, message, onRejected) };
    return res;
  };
  return Object.assign(wrapped, handler);
}

function isDecodeFailure(text: string): boolean {
  return DECODE_FAILURES.some((prefix) => text.startsWith(prefix));
}

async function connectUnary(
  res: UniversalServerResponse,
  body: AsyncIterable<Uint8Array>,
  message: string,
  onRejected: RejectionSink,
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
  yield* body;
  const trailer = res.trailer;
  if (trailer?.get("grpc-status") !== INTERNAL) return;
  if (!isDecodeFailure(decodeURIComponent(trailer.get("grpc-message") ?? ""))) return;
  onRejected("decode_error");
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
    if (
      field("grpc-status") !== INTERNAL ||
      !isDecodeFailure(decodeURIComponent(field("grpc-message") ?? ""))
    ) {
      yield chunk;
      continue;
    }
    onRejected("decode_error");
    const kept = lines.filter((l) => !/^grpc-(status|message|status-details-bin):/i.test(l));
    const trailer = Buffer.from(
      [...kept, `grpc-status: ${INVALID_ARGUMENT}`, `grpc-message: ${encodeURIComponent(message)}`]
        .map((l) => `${l}\r\n`)
        .join(""),
      "latin1",
    );
    const frame = Buffer.alloc(5 + trailer.byteLength);
    frame[0] = 0x80;
    frame.writeUInt32BE(trailer.byteLength, 1);
    frame.set(trailer, 5);
    yield frame;
  }
}

async function* once(bytes: Uint8Array): AsyncIterable<Uint8Array> {
  yield bytes;
}

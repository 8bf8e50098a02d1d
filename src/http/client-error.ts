import type { Socket } from "node:net";
import type { Rejection } from "./rejection.ts";

/** Socket errors that mean the client went away: nothing was rejected, nothing to answer. */
const GONE = new Set(["ECONNRESET", "EPIPE", "ECONNABORTED", "ERR_STREAM_DESTROYED"]);

const ANSWERS: Record<string, { status: string; reason: Rejection }> = {
  HPE_HEADER_OVERFLOW: { status: "431 Request Header Fields Too Large", reason: "headers_too_large" },
  HPE_CHUNK_EXTENSIONS_OVERFLOW: { status: "413 Payload Too Large", reason: "headers_too_large" },
  ERR_HTTP_REQUEST_TIMEOUT: { status: "408 Request Timeout", reason: "request_timeout" },
};
const MALFORMED = { status: "400 Bad Request", reason: "malformed_http" } as const;

/**
 * Answers what Node's HTTP/1.1 parser or its timeouts refused, as Node does when nobody listens to
 * "clientError" (a bare status line, then the connection is closed), and says why, so the refusal
 * can be counted. Returns undefined when the client merely went away.
 */
export function answerClientError(error: NodeJS.ErrnoException, socket: Socket): Rejection | undefined {
  const code = error.code ?? "";
  if (GONE.has(code)) {
    socket.destroy();
    return undefined;
  }
  const answer = ANSWERS[code] ?? MALFORMED;
  // Only while nothing of a response has gone out: a second status line would corrupt the stream.
  const message = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (socket.writable && message?.headersSent !== true) {
    socket.end(`HTTP/1.1 ${answer.status}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
  }
  socket.destroy();
  return answer.reason;
}

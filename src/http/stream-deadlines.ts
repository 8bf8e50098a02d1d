import type { IncomingHttpHeaders, ServerHttp2Stream } from "node:http2";
import { constants } from "node:http2";

export interface StreamDeadlines {
  /** The http2 server's "stream" listener: starts the clock on one request. */
  track(stream: ServerHttp2Stream, headers: IncomingHttpHeaders): void;
  /** Stops the sweep (when the server closes). */
  stop(): void;
}

/**
 * REQUEST_TIMEOUT_MS for HTTP/2, which Node applies to HTTP/1.1 only: a stream whose client has
 * not finished sending its request in time is reset, so a client trickling a body (a byte a
 * second) cannot hold a stream and its buffers for long. One sweep a second checks every stream
 * instead of a timer per request, which would cost on every call. Streaming requests (client
 * streams and bidi) are exempt: their bodies stay open by design.
 *
 * The same sweep resets streams that were answered while their client is still uploading.
 *
 * Most requests arrive whole in the read that opens their stream (a unary call's headers and its
 * one DATA frame), so streams are not watched from the start: those that opened in one turn of
 * the event loop are looked at together once the turn's I/O is done, and only those still
 * receiving then are watched until they close. Watching every stream (a map entry and a "close"
 * listener each) cost about 5 % of gRPC unary throughput, measured side by side.
 */
export function createStreamDeadlines(options: {
  timeoutMs: number;
  exempt: (path: string) => boolean;
  onExpired: () => void;
}): StreamDeadlines {
  const { timeoutMs, exempt, onExpired } = options;
  /** Streams still receiving their request, with the time they started (streaming: never). */
  const receiving = new Map<ServerHttp2Stream, number>();
  /** Streams seen answered while still receiving, reset on the next sweep if still receiving. */
  const answered = new WeakSet<ServerHttp2Stream>();
  let sweep: NodeJS.Timeout | undefined;

  function check(): void {
    const now = performance.now();
    for (const [stream, started] of receiving) {
      const state = stream.destroyed ? undefined : stream.state;
      if (state === undefined || state.remoteClose === 1) {
        receiving.delete(stream);
      } else if (state.localClose === 1) {
        // Answered (an oversized upload refused, say) while the client is still sending: reset
        // the stream (RFC 9113, section 8.1: NO_ERROR) so the client stops instead of uploading
        // into a stream nobody reads until the idle timeout. Not at once: nghttp2 sends RST_STREAM
        // ahead of queued DATA, which would cut the answer short; one sweep later it has gone out.
        if (answered.has(stream)) {
          receiving.delete(stream);
          stream.close(constants.NGHTTP2_NO_ERROR);
        } else {
          answered.add(stream);
        }
      } else if (now - started > timeoutMs) {
        receiving.delete(stream);
        onExpired();
        stream.close(constants.NGHTTP2_CANCEL);
      }
    }
    if (receiving.size === 0) {
      clearInterval(sweep);
      sweep = undefined;
    }
  }

  /** Streams opened in this turn of the event loop, and their paths, not yet looked at. */
  const opened: ServerHttp2Stream[] = [];
  const openedPaths: string[] = [];
  let openedAt = 0;
  let admission: NodeJS.Immediate | undefined;

  /** Watches the streams opened in the last turn that are still receiving their request. */
  function admit(): void {
    admission = undefined;
    for (let i = 0; i < opened.length; i++) {
      const stream = opened[i] as ServerHttp2Stream;
      // Gone, or its request read to the end: nothing left to time.
      if (stream.destroyed || stream.readableEnded) continue;
      const path = openedPaths[i] as string;
      const query = path.indexOf("?");
      const streaming = exempt(query < 0 ? path : path.slice(0, query));
      receiving.set(stream, streaming ? Number.POSITIVE_INFINITY : openedAt);
      stream.once("close", () => receiving.delete(stream));
    }
    opened.length = 0;
    openedPaths.length = 0;
    if (receiving.size > 0 && sweep === undefined) {
      sweep = setInterval(check, Math.min(1_000, timeoutMs));
      sweep.unref();
    }
  }

  return {
    track(stream, headers) {
      // A request without a body (GET, or END_STREAM on its headers) has been received whole.
      if (stream.endAfterHeaders) return;
      if (admission === undefined) {
        openedAt = performance.now();
        admission = setImmediate(admit);
      }
      opened.push(stream);
      openedPaths.push(headers[":path"] ?? "");
    },
    stop() {
      clearInterval(sweep);
      sweep = undefined;
      clearImmediate(admission);
      admission = undefined;
      opened.length = 0;
      openedPaths.length = 0;
      receiving.clear();
    },
  };
}

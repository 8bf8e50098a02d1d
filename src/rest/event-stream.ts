import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import {
  encodeEnvelope,
  pipe,
  transformSplitEnvelope,
  type UniversalHandler,
} from "@connectrpc/connect/protocol";
import { codeFromString, codeToHttpStatus } from "@connectrpc/connect/protocol-connect";
import { awaitDrain } from "../http/await-drain.ts";
import type { RequestHandler } from "../http/dual-protocol-server.ts";

type Request = Parameters<UniversalHandler>[0];

/** Connect's end-of-stream flag on an envelope. */
const END_STREAM = 0b10;
/** Largest message of a stream relayed (a price batch of 100 entries is some 20 KB). */
const MAX_MESSAGE_BYTES = 4 * 1024 * 1024;
/**
 * How long the answer waits for the stream's first message before it commits to 200 and an
 * event stream. An error that comes first (a bad cursor, a missing agent) is answered as any REST
 * error, with its HTTP status; a stream with nothing to say yet starts at once after this.
 */
const FIRST_MESSAGE_WAIT_MS = 250;

/**
 * Serves a server-streaming RPC as Server-Sent Events (the WHATWG HTML "event stream"): the call
 * goes to the method's Connect handler as a Connect streaming JSON call, so authentication,
 * limits, logs and metrics apply as on every other protocol, and each message it sends becomes
 * one event: `data:` its JSON on one line, `id:` its `data.cursor` when it carries one (so a
 * browser's EventSource resumes with Last-Event-ID), `event:` its `data.type` when it has one. Heartbeats become comment lines, which
 * EventSource ignores and proxies see as traffic. An error that ends the stream becomes
 * `event: error` with Connect's error JSON as its data.
 *
 * A client that goes away, or stops reading for `writeTimeoutMs` (STREAM_WRITE_TIMEOUT_MS) while
 * the connection's buffers are full, ends the stream: the handler's generator is returned, so its
 * stream slot, watch and queue are let go.
 */
export async function serveEventStream(
  handler: UniversalHandler,
  request: Omit<Request, "body">,
  message: JsonObject,
  res: Parameters<RequestHandler>[1],
  options: { readonly writeTimeoutMs: number },
): Promise<void> {
  const header = new Headers(request.header);
  header.set("content-type", "application/connect+json");
  const body = encodeEnvelope(0, new TextEncoder().encode(JSON.stringify(message)));
  const response = await handler({
    ...request,
    header,
    body: (async function* () {
      yield body;
    })(),
  });
  const answer = (response.body ?? emptyBody())[Symbol.asyncIterator]();
  const frames = pipe({ [Symbol.asyncIterator]: () => answer }, transformSplitEnvelope(MAX_MESSAGE_BYTES))[
    Symbol.asyncIterator
  ]();
  try {
    if (response.status !== 200) {
      // Refused before the handler ran (a content type, a protocol version): relay as is.
      res.statusCode = response.status;
      res.end();
      return;
    }
    let next = frames.next();
    const first = await Promise.race([
      next,
      new Promise<"waiting">((resolve) => setTimeout(resolve, FIRST_MESSAGE_WAIT_MS, "waiting").unref()),
    ]);
    if (first !== "waiting" && !first.done && (first.value.flags & END_STREAM) !== 0) {
      const error = endError(first.value.data);
      if (error !== undefined) {
        const json = new TextEncoder().encode(JSON.stringify(error));
        res.statusCode = codeToHttpStatus(codeFromString(String(error.code)) ?? 2);
        res.setHeader("content-type", "application/json");
        res.setHeader("content-length", String(json.byteLength));
        res.end(json);
        return;
      }
    }
    res.statusCode = 200;
    res.setHeader("content-type", "text/event-stream; charset=utf-8");
    res.setHeader("cache-control", "no-cache");
    // Tells nginx-style proxies not to hold events back in a buffer.
    res.setHeader("x-accel-buffering", "no");
    // A first comment sends the headers now, so the client knows the stream is open before its
    // first event.
    res.write(": open\n\n");
    for (;;) {
      const frame = await next;
      if (frame.done) break;
      const text = eventOf(frame.value.flags, frame.value.data);
      if (text !== "" && !res.write(text)) {
        const outcome = await awaitDrain(res, options.writeTimeoutMs);
        if (outcome === "stalled") {
          // The reader is not reading: nothing more can reach it, not even an error event.
          res.destroy();
          return;
        }
        if (outcome === "closed") return;
      }
      if ((frame.value.flags & END_STREAM) !== 0) break;
      next = frames.next();
    }
    res.end();
  } finally {
    // The client went away (or the stream ended): let the handler's generator finish. connect's
    // pipe does not return its source when it is returned itself, so the answer is returned here:
    // that runs the handler's generator to its end, and its slot, watch and queue are let go.
    await frames.return?.();
    await answer.return?.();
  }
}

/** An event name as the service makes them (agent.created, run.succeeded): nothing to escape. */
const EVENT_NAME = /^[a-z][a-z0-9_.-]{0,63}$/;

/** The text of one event: a message, a heartbeat comment, or the error that ended the stream. */
function eventOf(flags: number, data: Uint8Array): string {
  if ((flags & END_STREAM) !== 0) {
    const error = endError(data);
    return error === undefined ? "" : `event: error\ndata: ${JSON.stringify(error)}\n\n`;
  }
  const json = new TextDecoder().decode(data);
  const parsed = JSON.parse(json) as { heartbeat?: boolean; data?: { cursor?: string; type?: unknown } };
  if (parsed.heartbeat === true) return ": heartbeat\n\n";
  const cursor = parsed.data?.cursor;
  // An agent event is named by its type (`event: run.succeeded`), so that a browser can listen for
  // one kind with EventSource.addEventListener; price messages have no type and stay "message".
  const type = parsed.data?.type;
  const name = typeof type === "string" && EVENT_NAME.test(type) ? `event: ${type}\n` : "";
  // JSON on one line: JSON.stringify writes no raw newline, so one data line holds the message.
  return `${typeof cursor === "string" ? `id: ${cursor}\n` : ""}${name}data: ${json}\n\n`;
}

/** The error of Connect's end-of-stream message, if it carries one. */
function endError(data: Uint8Array): (JsonObject & { code: JsonValue }) | undefined {
  const end = JSON.parse(new TextDecoder().decode(data)) as { error?: JsonObject };
  return end.error === undefined ? undefined : (end.error as JsonObject & { code: JsonValue });
}

async function* emptyBody(): AsyncIterable<Uint8Array> {}

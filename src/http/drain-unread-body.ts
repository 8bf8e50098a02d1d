import type * as http from "node:http";
import type * as http2 from "node:http2";

/**
 * Makes a request body that a handler stops reading early get drained instead of destroyed.
 *
 * connect-node reads bodies with `for await`; when it stops before the end (a message over
 * MAX_REQUEST_BYTES, a malformed envelope), leaving the loop destroys the Node request before the
 * error is written. On HTTP/1.1 that resets the whole TCP connection: the caller sees "connection
 * reset" instead of resource_exhausted, and so may the next call sent on the same keep-alive
 * connection. On HTTP/2 the call hangs, its response never completing. Iterating without
 * destroy-on-return and discarding what is left is what Node itself does with any body a handler
 * leaves unread, so the error reaches the caller and the connection stays usable.
 */
export function drainUnreadBody(req: http.IncomingMessage | http2.Http2ServerRequest): void {
  req[Symbol.asyncIterator] = async function* (): AsyncGenerator<unknown, undefined> {
    try {
      yield* req.iterator({ destroyOnReturn: false });
    } finally {
      if (!req.complete) req.resume();
    }
    return undefined;
  };
}

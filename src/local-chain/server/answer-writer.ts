import type * as http from "node:http";

export interface AnswerWriter {
  /** Writes a whole answer; it counts in `unsent` until it is out, and is cut off past the timeout. */
  send(res: http.ServerResponse, status: number, headers: http.OutgoingHttpHeaders, text: string): void;
  /** Bytes of answers handed to Node and not yet to the network, over every connection. */
  readonly unsent: number;
}

/**
 * Writes the local chain port's answers with a write timeout: an answer still not out after
 * `writeTimeoutMs` (its client does not read it) is cut off with its connection, so that a client
 * cannot make the process hold an answer for as long as it likes. `unsent` lets the port refuse
 * new work while too much is held.
 */
export function createAnswerWriter(options: { writeTimeoutMs: number; onTimeout: () => void }): AnswerWriter {
  let unsent = 0;
  return {
    get unsent() {
      return unsent;
    },
    send(res, status, headers, text) {
      const bytes = Buffer.byteLength(text);
      unsent += bytes;
      res.writeHead(status, headers).end(text);
      const timer = setTimeout(() => {
        options.onTimeout();
        res.destroy();
      }, options.writeTimeoutMs).unref();
      // "close" comes once the answer is out, or once its connection is gone.
      res.once("close", () => {
        clearTimeout(timer);
        unsent -= bytes;
      });
    },
  };
}

import type { EventEmitter } from "node:events";

/** How a wait for room in a stream's write buffer ended. */
export type DrainOutcome = "drained" | "closed" | "stalled";

/** An HTTP/1.1 response, an HTTP/2 compatibility response, or a raw HTTP/2 stream. */
interface Writer extends EventEmitter {
  readonly destroyed: boolean;
}

/**
 * Waits for `writer` to take what it buffered after a write that answered false: "drained" when it
 * did, "closed" when the connection went away (or failed) first, "stalled" when nothing drained
 * within `timeoutMs`. A bare `once(writer, "drain")` waits for good in both other cases: no drain
 * comes after "close", nor while a reader that stopped reading keeps every buffer full, and the
 * writer waits on with all it holds (a stream slot, a watch, a replay). The caller ends a stalled
 * writer itself, as only it knows how to tell its protocol.
 */
export function awaitDrain(writer: Writer, timeoutMs: number): Promise<DrainOutcome> {
  if (writer.destroyed) return Promise.resolve("closed");
  return new Promise((resolve) => {
    const done = (outcome: DrainOutcome) => {
      clearTimeout(timer);
      writer.off("drain", onDrain);
      writer.off("close", onClose);
      writer.off("error", onClose);
      resolve(outcome);
    };
    const onDrain = () => done("drained");
    const onClose = () => done("closed");
    const timer = setTimeout(done, timeoutMs, "stalled");
    writer.once("drain", onDrain);
    writer.once("close", onClose);
    // A listener of its own, so an error here is not taken for an unhandled one either.
    writer.once("error", onClose);
  });
}

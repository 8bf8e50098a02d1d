import type { Readable } from "node:stream";
import { Code, ConnectError } from "@connectrpc/connect";

export interface BodyLimits {
  /** Connect: the body is the message. gRPC and gRPC-Web: one 5-byte-prefixed message. */
  readonly connect: boolean;
  readonly readMaxBytes: number;
  /** The request's content-length header, when it has one. */
  readonly lengthHeader: string | undefined;
}

/**
 * Reads a request's body into one buffer and hands it to `done`, or the error that refuses it:
 * over `readMaxBytes` (as soon as that is known: the content length, the gRPC prefix, or the
 * bytes so far), or shorter than its content length. A refused body is still read to its end and
 * dropped, so the connection stays usable. `done` is called once.
 */
export function readBody(
  source: Readable,
  limits: BodyLimits,
  done: (body: Uint8Array | ConnectError) => void,
): void {
  const reader = new BodyReader(limits, done);
  source.on("data", (chunk: Buffer) => reader.data(chunk));
  // "end" comes once: a plain listener, without the wrapper `once` makes and removes on every
  // call (measured side by side: 2 to 4 % of HTTP/1.1 throughput).
  source.on("end", () => reader.end());
}

/** The error for a message over the limit; `size` is the message's when it is known. */
function tooLarge(size: number, known: boolean, readMaxBytes: number): ConnectError {
  return new ConnectError(
    known
      ? `message size ${size} is larger than configured readMaxBytes ${readMaxBytes}`
      : `message size is larger than configured readMaxBytes ${readMaxBytes}`,
    Code.ResourceExhausted,
  );
}

/**
 * The state of one body being read. The source keeps its listeners (and so this object) until it
 * closes, which under load is well after the body was read: once settled, the reader lets go of
 * its chunks and of `done` (and all `done` holds), so only this small object stays behind.
 */
class BodyReader {
  readonly #connect: boolean;
  readonly #readMaxBytes: number;
  /** The content length announced, NaN without one. */
  readonly #hint: number;
  /**
   * The most bytes kept. A gRPC body holds one message, and bytes past its prefix and the limit
   * only tell that a second one follows (an error either way).
   */
  readonly #cap: number;
  #chunks: Buffer[] = [];
  #size = 0;
  #done: ((body: Uint8Array | ConnectError) => void) | undefined;

  constructor(limits: BodyLimits, done: (body: Uint8Array | ConnectError) => void) {
    this.#connect = limits.connect;
    this.#readMaxBytes = limits.readMaxBytes;
    this.#hint = limits.lengthHeader === undefined ? Number.NaN : Number(limits.lengthHeader);
    this.#cap = limits.connect ? limits.readMaxBytes : limits.readMaxBytes + 10;
    this.#done = done;
    if (this.#connect && this.#hint > this.#readMaxBytes) {
      this.#settle(tooLarge(this.#hint, true, this.#readMaxBytes));
    }
  }

  data(chunk: Buffer): void {
    if (this.#done === undefined) return;
    this.#size += chunk.byteLength;
    if (this.#size > this.#cap) {
      if (this.#connect) {
        this.#settle(tooLarge(this.#size, false, this.#readMaxBytes));
        return;
      }
      this.#chunks.push(chunk.subarray(0, chunk.byteLength - (this.#size - this.#cap)));
      this.#size = this.#cap;
    } else {
      this.#chunks.push(chunk);
    }
    if (!this.#connect) this.#settleIfFrameTooLarge();
  }

  end(): void {
    if (this.#done === undefined) return;
    const size = this.#size;
    if (this.#connect && !Number.isNaN(this.#hint) && size !== this.#hint) {
      this.#settle(
        new ConnectError(
          `protocol error: promised ${this.#hint} bytes, received ${size}`,
          Code.InvalidArgument,
        ),
      );
      return;
    }
    const chunks = this.#chunks;
    this.#settle(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size));
  }

  /** A gRPC message announced larger than allowed is refused once its prefix is in. */
  #settleIfFrameTooLarge(): void {
    const chunks = this.#chunks;
    if (this.#size < 5 || chunks.length === 0) return;
    const first = chunks[0] as Buffer;
    const prefix = first.byteLength >= 5 ? first : Buffer.concat(chunks, this.#size);
    const length = prefix.readUInt32BE(1);
    if (length > this.#readMaxBytes) this.#settle(tooLarge(length, true, this.#readMaxBytes));
  }

  #settle(body: Uint8Array | ConnectError): void {
    const done = this.#done;
    if (done === undefined) return;
    this.#done = undefined;
    this.#chunks = EMPTY;
    done(body);
  }
}

/** What a settled reader holds: nothing (and it is never pushed to once settled). */
const EMPTY: Buffer[] = [];

/** A scratch buffer large answers grow; past KEEP_BYTES it is let go after use. */
const INITIAL_BYTES = 4096;
const KEEP_BYTES = 1024 * 1024;

/**
 * A byte buffer an encoder keeps and writes each answer into, so encoding allocates nothing but
 * the copy of the result (a pooled Buffer for small answers). Encoding is synchronous, so one
 * encoder's buffer is never shared by two answers at once.
 */
export class ScratchBuffer {
  buf = Buffer.allocUnsafe(INITIAL_BYTES);
  pos = 0;

  ensure(size: number): void {
    const required = this.pos + size;
    if (required <= this.buf.length) return;
    let length = this.buf.length * 2;
    while (length < required) length *= 2;
    const grown = Buffer.allocUnsafe(length);
    this.buf.copy(grown, 0, 0, this.pos);
    this.buf = grown;
  }

  /**
   * One answer: what `write` writes of `message`, copied out; undefined when `write` throws (the
   * encoder leaves the message to protobuf-es).
   */
  encode<M>(write: (buffer: this, message: M) => void, message: M): Buffer | undefined {
    this.pos = 0;
    try {
      write(this, message);
    } catch {
      this.release();
      return undefined;
    }
    const out = Buffer.allocUnsafe(this.pos);
    this.buf.copy(out, 0, 0, this.pos);
    this.release();
    return out;
  }

  /** Gives up a scratch grown past the size worth keeping (after an answer, used or abandoned). */
  private release(): void {
    this.pos = 0;
    if (this.buf.length > KEEP_BYTES) this.buf = Buffer.allocUnsafe(INITIAL_BYTES);
  }

  /** Text known to be ASCII (numbers, base64, literals). */
  ascii(text: string): void {
    const length = text.length;
    this.ensure(length);
    const buf = this.buf;
    let pos = this.pos;
    for (let i = 0; i < length; i++) buf[pos++] = text.charCodeAt(i);
    this.pos = pos;
  }

  /** Any text, as UTF-8. */
  utf8(text: string): void {
    this.ensure(text.length * 3);
    this.pos += this.buf.write(text, this.pos, "utf8");
  }

  raw(bytes: Uint8Array): void {
    const length = bytes.length;
    this.ensure(length);
    const buf = this.buf;
    let pos = this.pos;
    if (length < 32) {
      for (let i = 0; i < length; i++) buf[pos++] = bytes[i] as number;
    } else {
      buf.set(bytes, pos);
      pos += length;
    }
    this.pos = pos;
  }
}

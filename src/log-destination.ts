import * as fs from "node:fs";

export interface LogDestinationOptions {
  /** The file descriptor lines go to (1: stdout). */
  readonly fd: number;
  /**
   * Bytes held while the descriptor does not keep up (a stdout nobody reads); lines past it are
   * dropped, and counted, rather than held until memory runs out.
   */
  readonly maxBufferBytes: number;
  /**
   * How long a line may wait for others to share its write. 0 writes once per turn of the event
   * loop. A batch that reaches BATCH_BYTES goes at once.
   */
  readonly flushIntervalMs?: number;
}

/** A pino destination: `write` takes one line, `flush` and `flushSync` push out what is held. */
export interface LogDestination {
  write(line: string): void;
  /** Calls back once every line written so far has left the process. */
  flush(callback?: (error?: Error) => void): void;
  /** Writes what is held now, blocking; for the process's last moments (`exit`). */
  flushSync(): void;
  /** Lines dropped: the buffer full, the descriptor gone (EPIPE), or not taking writes at exit. */
  readonly dropped: number;
}

/** How long to wait before writing again to a descriptor that answered EAGAIN. */
const RETRY_MS = 5;
/**
 * A write still unfinished after this long means the descriptor is not being read (a full pipe):
 * `flushSync` then leaves what it holds, since a blocking write would keep the process from exiting.
 */
const STUCK_MS = 1000;
/** A batch this large is written without waiting for the interval. */
const BATCH_BYTES = 16 * 1024;

/**
 * Log lines written in batches, off the main thread.
 *
 * Under load a service writes a line per call. pino's own destination (sonic-boom) appends each
 * line to one growing string and measures that string's byte length on every append, which
 * copies the whole pending batch again and again: at a few thousand calls a second that was the
 * largest source of garbage in the process, several kilobytes per 200-byte line. And it writes
 * as soon as the last write is done, so at a steady rate below saturation every call paid a
 * hand-over to the thread pool and back. Here a line is kept as it is; the lines of a short
 * interval are joined once and handed to one asynchronous `fs.write`, so a blocking descriptor
 * (a pipe whose reader is slow) never stalls the event loop. Order is kept: one write at a time.
 */
export function createLogDestination(options: LogDestinationOptions): LogDestination {
  const { fd, maxBufferBytes } = options;
  const intervalMs = options.flushIntervalMs ?? 0;
  /** Lines not yet handed to a write, and their size. */
  let pending: string[] = [];
  let pendingBytes = 0;
  /** The batch a write is working on (what is left of it), or undefined when idle. */
  let writing: Buffer | undefined;
  let writeStartedAt = 0;
  let timer: NodeJS.Timeout | undefined;
  let immediate: NodeJS.Immediate | undefined;
  let broken = false;
  let dropped = 0;
  let waiting: ((error?: Error) => void)[] = [];

  /** Arranges for the pending lines to be written: now when `soon`, else after the interval. */
  const schedule = (soon: boolean) => {
    if (writing !== undefined || immediate !== undefined) return;
    if (soon || intervalMs === 0) {
      clearTimeout(timer);
      timer = undefined;
      immediate = setImmediate(writeNext);
    } else if (timer === undefined) {
      // Unreferenced: lines waiting here never keep the process alive; exit writes them.
      timer = setTimeout(writeNext, intervalMs);
      timer.unref();
    }
  };

  function writeNext(): void {
    clearTimeout(timer);
    timer = undefined;
    immediate = undefined;
    if (writing !== undefined) return;
    if (pending.length === 0 || broken) {
      settle();
      return;
    }
    writing = Buffer.from(pending.length === 1 ? (pending[0] as string) : pending.join(""), "utf8");
    writeStartedAt = performance.now();
    pending = [];
    pendingBytes = 0;
    writeChunk();
  }

  function writeChunk(): void {
    const chunk = writing as Buffer;
    fs.write(fd, chunk, 0, chunk.byteLength, null, (error, written) => {
      if (error !== null) {
        if (error.code === "EAGAIN") {
          setTimeout(writeChunk, RETRY_MS);
          return;
        }
        // The reader is gone (EPIPE) or the descriptor unusable: nothing more can be written.
        broken = true;
        dropped += pending.length + 1;
        pending = [];
        pendingBytes = 0;
        writing = undefined;
        settle(error);
        return;
      }
      if (written < chunk.byteLength) {
        writing = chunk.subarray(written);
        writeChunk();
        return;
      }
      writing = undefined;
      // Lines that came during the write wait their turn like any others, unless a flush waits.
      if (waiting.length > 0 || pendingBytes >= BATCH_BYTES) writeNext();
      else if (pending.length > 0) schedule(false);
      else settle();
    });
  }

  /** Tells flush callers the lines before them are out (or that they never will be). */
  function settle(error?: Error): void {
    if (writing !== undefined || (pending.length > 0 && !broken)) return;
    const callbacks = waiting;
    waiting = [];
    for (const callback of callbacks) callback(error);
  }

  return {
    write(line) {
      if (broken) {
        dropped++;
        return;
      }
      // Counted in UTF-16 units, which for log lines (JSON, nearly all ASCII) is their size.
      const bytes = line.length;
      if (pendingBytes + (writing?.byteLength ?? 0) + bytes > maxBufferBytes) {
        dropped++;
        return;
      }
      pending.push(line);
      pendingBytes += bytes;
      schedule(pendingBytes >= BATCH_BYTES);
    },
    flush(callback) {
      if (callback !== undefined) waiting.push(callback);
      if (writing === undefined) {
        if (pending.length === 0 || broken) settle();
        else schedule(true);
      }
    },
    flushSync() {
      if (broken) return;
      if (writing !== undefined && performance.now() - writeStartedAt > STUCK_MS) {
        dropped += pending.length;
        pending = [];
        pendingBytes = 0;
        return;
      }
      // A write already handed to the thread pool finishes there; what is held goes after it.
      let bytes = Buffer.from(pending.join(""), "utf8");
      pending = [];
      pendingBytes = 0;
      while (bytes.byteLength > 0) {
        try {
          bytes = bytes.subarray(fs.writeSync(fd, bytes));
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code === "EAGAIN") continue;
          broken = true;
          return;
        }
      }
    },
    get dropped() {
      return dropped;
    },
  };
}

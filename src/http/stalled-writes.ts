import type { EventEmitter } from "node:events";

/** An HTTP/1.1 response or an HTTP/2 compatibility response. */
interface Response extends EventEmitter {
  readonly writableNeedDrain: boolean;
  readonly destroyed: boolean;
  destroy(): void;
}

export interface StalledWrites {
  /** Watches a streaming response until it closes. */
  watch(res: Response): void;
  /** Stops the sweep (when the server closes). */
  stop(): void;
}

/**
 * STREAM_WRITE_TIMEOUT_MS for the streams connect-node writes (the Connect protocol, gRPC-Web, and
 * gRPC when the lean path is off), which wait for "drain" without a bound: a response that has
 * waited for a drain for `timeoutMs` is destroyed, so a reader that stopped reading (or vanished
 * without closing) does not hold its stream, slot and watch for good. Any drain starts the wait
 * afresh, so a slow reader that keeps reading is left alone. One sweep a second checks every
 * stream instead of a timer per write. (The REST event stream and the lean gRPC path wait for
 * their drains themselves, with the same bound.)
 */
export function createStalledWrites(options: {
  readonly timeoutMs: number;
  readonly onStalled?: () => void;
}): StalledWrites {
  const { timeoutMs } = options;
  /** Watched responses, with the time a wait for drain was first seen (undefined: not waiting). */
  const watched = new Map<Response, number | undefined>();
  let sweep: NodeJS.Timeout | undefined;

  function check(): void {
    const now = performance.now();
    for (const [res, since] of watched) {
      if (res.destroyed) {
        watched.delete(res);
      } else if (!res.writableNeedDrain) {
        if (since !== undefined) watched.set(res, undefined);
      } else if (since === undefined) {
        watched.set(res, now);
      } else if (now - since >= timeoutMs) {
        watched.delete(res);
        options.onStalled?.();
        res.destroy();
      }
    }
    if (watched.size === 0) {
      clearInterval(sweep);
      sweep = undefined;
    }
  }

  return {
    watch(res) {
      watched.set(res, undefined);
      res.on("drain", () => {
        if (watched.has(res)) watched.set(res, undefined);
      });
      res.once("close", () => watched.delete(res));
      if (sweep === undefined) {
        sweep = setInterval(check, Math.min(1_000, timeoutMs / 2));
        sweep.unref();
      }
    },
    stop() {
      clearInterval(sweep);
      sweep = undefined;
      watched.clear();
    },
  };
}

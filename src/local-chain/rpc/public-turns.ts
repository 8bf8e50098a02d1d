/**
 * Runs the work of the chain's public port (each request, each request of a batch) one piece at a
 * time, in the order it came, and gives the chain's thread back to its event loop once a slice
 * of it has run: whatever waits there (the service's own requests, which arrive as messages from
 * the service's thread, and are not queued here) is then served before the next piece. So the
 * public port's clients share the thread between them in turn, and together get a slice of it at
 * a time, not all of it: 32 connections each sending batches of 100 scans used to run 32 scans
 * between two looks at the service's requests (every batch yielded on its own), now one.
 */
export interface PublicTurns {
  /** Runs `work` once the pieces queued before it have run; settles as it does. */
  run<T>(work: () => T | Promise<T>): Promise<T>;
  /** Pieces waiting for their turn. */
  readonly waiting: number;
}

/** How long public work runs back to back before the thread goes back to its event loop. */
const DEFAULT_SLICE_MS = 2;

export function createPublicTurns(options: { readonly sliceMs?: number } = {}): PublicTurns {
  const sliceMs = options.sliceMs ?? DEFAULT_SLICE_MS;
  const queue: (() => void)[] = [];
  /** A piece runs, or the next one waits for the event loop's turn. */
  let busy = false;
  let sliceEnds = 0;

  const startNext = () => {
    const start = queue.shift();
    if (start === undefined) {
      busy = false;
      return;
    }
    start();
  };
  /** After a piece: the next one at once while the slice lasts, else after the event loop's turn. */
  const finished = () => {
    if (queue.length === 0) {
      busy = false;
      return;
    }
    if (performance.now() < sliceEnds) {
      startNext();
      return;
    }
    // An immediate set now runs on the loop's next turn, after it has polled for messages and I/O.
    setImmediate(() => {
      sliceEnds = performance.now() + sliceMs;
      startNext();
    });
  };

  return {
    run(work) {
      return new Promise((resolve, reject) => {
        queue.push(() => {
          let result: ReturnType<typeof work>;
          try {
            result = work();
          } catch (error) {
            reject(error);
            finished();
            return;
          }
          Promise.resolve(result).then(resolve, reject).finally(finished);
        });
        if (busy) return;
        busy = true;
        sliceEnds = performance.now() + sliceMs;
        startNext();
      });
    },
    get waiting() {
      return queue.length;
    },
  };
}

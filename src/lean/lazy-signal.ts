/**
 * A call's abort signal, made only when someone asks for it.
 *
 * Every call needs a signal that aborts when its client goes away or its deadline passes, but
 * most unary handlers (a catalog read) never look at it, and an AbortController with its signal
 * costs more to make than such a call's own work. This one records an abort that comes before
 * anyone asked, and hands out a signal already aborted with the same reason when asked later,
 * so a reader cannot tell it from a signal made up front.
 */
export interface LazySignal {
  /** The signal (made on first use). */
  readonly signal: AbortSignal;
  /** Aborts the signal with `reason`, now or when it is made; later calls change nothing. */
  abort(reason: unknown): void;
}

export function createLazySignal(): LazySignal {
  let controller: AbortController | undefined;
  let aborted = false;
  let abortReason: unknown;
  return {
    get signal() {
      if (controller === undefined) {
        controller = new AbortController();
        if (aborted) controller.abort(abortReason);
      }
      return controller.signal;
    },
    abort(reason) {
      if (aborted) return;
      aborted = true;
      abortReason = reason;
      controller?.abort(reason);
    },
  };
}

/**
 * Readiness for the health service: whether the dependencies can serve, asked of `isReady` (a
 * database ping) without letting callers multiply the pings. Concurrent `check()`s share the probe
 * in flight, and polling for watchers is one timer for all of them, running only while at least
 * one listens, so a thousand health watchers cost one ping per interval and idle servers none.
 */
export interface ReadinessPoller {
  /** Readiness now; callers arriving while a probe runs share its answer. */
  check(): Promise<boolean>;
  /** Calls `listener` with every polled answer until the returned function is called. */
  subscribe(listener: (ready: boolean) => void): () => void;
}

export function createReadinessPoller(options: {
  /** Never throws by contract; a rejection counts as not ready all the same. */
  isReady: () => Promise<boolean>;
  intervalMs: number;
}): ReadinessPoller {
  const { isReady, intervalMs } = options;
  const listeners = new Set<(ready: boolean) => void>();
  let probe: Promise<boolean> | undefined;
  let timer: NodeJS.Timeout | undefined;
  let polling = false;

  const check = (): Promise<boolean> => {
    probe ??= isReady()
      .catch(() => false)
      .finally(() => {
        probe = undefined;
      });
    return probe;
  };

  const schedule = () => {
    if (timer !== undefined || polling || listeners.size === 0) return;
    timer = setTimeout(poll, intervalMs);
    // The server keeps the process alive; a health poll alone must not.
    timer.unref();
  };

  const poll = async () => {
    timer = undefined;
    polling = true;
    try {
      const ready = await check();
      for (const listener of listeners) listener(ready);
    } finally {
      polling = false;
      schedule();
    }
  };

  return {
    check,
    subscribe(listener) {
      listeners.add(listener);
      schedule();
      return () => {
        listeners.delete(listener);
        if (listeners.size === 0 && timer !== undefined) {
          clearTimeout(timer);
          timer = undefined;
        }
      };
    },
  };
}

import type { ApiKeys } from "./api-keys.ts";

/** One stream's hold on the key it was opened with. */
export interface KeyHold {
  /** Aborts once the key is found revoked. */
  readonly signal: AbortSignal;
  /** The stream ended: stop watching its key for it. */
  close(): void;
}

export interface RevocationWatch {
  /** Watches `keyId` for as long as a stream opened with it lasts. */
  hold(keyId: string): KeyHold;
  /** For leak checks: keys watched, holds on them, and whether the check timer exists. */
  stats(): { keys: number; holds: number; timer: boolean };
  /** Stops the timer and lets go of the listener on revokes. */
  close(): void;
}

/**
 * Ends what an API key opened once the key is revoked: a key is checked when a call starts, but a
 * stream outlives that check by hours. A revoke made in this process aborts the holds on its key
 * at once; one made elsewhere (another replica, the keys command) is found by asking the store,
 * every `periodMs` (the key cache's time to live, so streams end within the window in which the
 * other replicas' calls stop too), which keys of those held here are revoked: one query for all
 * of them, and none while no stream holds a key. A store that cannot answer keeps the streams
 * open until it can (`onError` is told): an outage of the database does not end every stream.
 */
export function createRevocationWatch(options: {
  readonly keys: ApiKeys;
  readonly periodMs: number;
  readonly onError?: (error: unknown) => void;
}): RevocationWatch {
  const { keys, periodMs } = options;
  const held = new Map<string, Set<AbortController>>();
  let holds = 0;
  let timer: NodeJS.Timeout | undefined;
  let checking = false;

  const revoke = (keyId: string) => {
    const controllers = held.get(keyId);
    if (controllers === undefined) return;
    held.delete(keyId);
    holds -= controllers.size;
    for (const controller of controllers) controller.abort();
    stopIfIdle();
  };
  const stopIfIdle = () => {
    if (held.size > 0 || timer === undefined) return;
    clearInterval(timer);
    timer = undefined;
  };
  const check = async () => {
    if (checking) return;
    checking = true;
    try {
      for (const keyId of await keys.revokedAmong([...held.keys()])) revoke(keyId);
    } catch (error) {
      options.onError?.(error);
    } finally {
      checking = false;
    }
  };
  const stopListening = keys.onRevoked(revoke);

  return {
    hold(keyId) {
      const controller = new AbortController();
      let controllers = held.get(keyId);
      if (controllers === undefined) {
        controllers = new Set();
        held.set(keyId, controllers);
      }
      controllers.add(controller);
      holds++;
      timer ??= setInterval(() => void check(), periodMs).unref();
      let closed = false;
      return {
        signal: controller.signal,
        close() {
          if (closed) return;
          closed = true;
          const now = held.get(keyId);
          // Gone already when the key was revoked (its holds were counted off then).
          if (now === undefined || !now.delete(controller)) return;
          holds--;
          if (now.size === 0) held.delete(keyId);
          stopIfIdle();
        },
      };
    },
    stats: () => ({ keys: held.size, holds, timer: timer !== undefined }),
    close() {
      stopListening();
      clearInterval(timer);
      timer = undefined;
    },
  };
}

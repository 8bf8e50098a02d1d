import type { SentStatus, TransferChain } from "../chain/chain.ts";

/** Signatures one getSignatureStatuses call may carry (the JSON-RPC method's own limit). */
const MAX_STATUSES_PER_CALL = 256;

export interface StatusWatch {
  /**
   * The signature's status (undefined: none yet) from a poll no later than `dueMs` from now; an
   * earlier poll that goes out anyway, for other transactions, carries it too.
   */
  next(signature: string, dueMs: number, signal: AbortSignal): Promise<SentStatus | undefined>;
}

/**
 * The statuses of every transaction the runs in flight follow, asked for together. Each follower
 * says how long it can wait for its next status; a poll goes out when the first of them is due,
 * at most one every `minGapMs`, and carries every signature waiting, due or not. A lone run thus
 * polls as often as it asks (one request a slot), and many runs share one call every `minGapMs`:
 * each learns its confirmation within that gap of it, whatever its own pace, and the requests
 * grow with time, not with the runs (at most 256 signatures a call).
 */
export function createStatusWatch(options: {
  readonly transfers: TransferChain;
  /** The least time between two polls. */
  readonly minGapMs: number;
  readonly now?: () => number;
}): StatusWatch {
  const { transfers, minGapMs } = options;
  const now = options.now ?? (() => performance.now());
  interface Waiter {
    readonly dueAt: number;
    resolve(status: SentStatus | undefined): void;
    reject(error: unknown): void;
  }
  const waiting = new Map<string, Waiter[]>();
  let timer: NodeJS.Timeout | undefined;
  let timerAt = Number.POSITIVE_INFINITY;
  let lastPoll = Number.NEGATIVE_INFINITY;

  /** The poll for the earliest due waiter, not sooner than `minGapMs` after the last one. */
  const schedule = () => {
    if (waiting.size === 0) return;
    let due = Number.POSITIVE_INFINITY;
    for (const waiters of waiting.values()) for (const w of waiters) due = Math.min(due, w.dueAt);
    const at = Math.max(due, lastPoll + minGapMs);
    if (timer !== undefined && timerAt <= at) return;
    if (timer !== undefined) clearTimeout(timer);
    timerAt = at;
    timer = setTimeout(poll, Math.max(0, at - now()));
  };

  const poll = () => {
    timer = undefined;
    timerAt = Number.POSITIVE_INFINITY;
    lastPoll = now();
    const asked = [...waiting];
    waiting.clear();
    if (asked.length === 0) return;
    for (let i = 0; i < asked.length; i += MAX_STATUSES_PER_CALL) {
      const group = asked.slice(i, i + MAX_STATUSES_PER_CALL);
      transfers
        .getSignatureStatuses(
          group.map(([signature]) => signature),
          undefined,
        )
        .then(
          (statuses) => {
            group.forEach(([, waiters], j) => {
              for (const w of waiters) w.resolve(statuses[j]);
            });
          },
          (error: unknown) => {
            for (const [, waiters] of group) for (const w of waiters) w.reject(error);
          },
        );
    }
  };

  return {
    next(signature, dueMs, signal) {
      if (signal.aborted) return Promise.reject(signal.reason);
      return new Promise<SentStatus | undefined>((resolve, reject) => {
        // A follower that gives up is no reason for a poll: it leaves the list at once.
        const abort = () => {
          const left = (waiting.get(signature) ?? []).filter((w) => w !== waiter);
          if (left.length === 0) waiting.delete(signature);
          else waiting.set(signature, left);
          reject(signal.reason);
        };
        const waiter: Waiter = {
          dueAt: now() + dueMs,
          resolve: (status) => {
            signal.removeEventListener("abort", abort);
            resolve(status);
          },
          reject: (error) => {
            signal.removeEventListener("abort", abort);
            reject(error);
          },
        };
        signal.addEventListener("abort", abort, { once: true });
        waiting.set(signature, [...(waiting.get(signature) ?? []), waiter]);
        schedule();
      });
    },
  };
}

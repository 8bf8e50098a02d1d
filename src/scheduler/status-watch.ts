import { MAX_STATUSES_PER_CALL, type SentStatus, type TransferChain } from "../chain/chain.ts";

export interface StatusWatch {
  /**
   * The signature's status (undefined: none yet) from a poll no later than `dueMs` from now, and
   * sooner when other transactions wait too (see createStatusWatch).
   */
  next(signature: string, dueMs: number, signal: AbortSignal): Promise<SentStatus | undefined>;
}

/**
 * The statuses of every transaction the runs in flight follow, asked for together: each poll is
 * one call (256 signatures a call) carrying every signature waiting. Each transaction is worth
 * one poll a slot (`slotMs`), so with W of them waiting a poll goes out `slotMs` / W after the
 * first of them began to wait, but never sooner than `minGapMs` after the last poll, nor later
 * than a follower's own due time. A lone run thus polls once a slot, as it would alone; 64 in
 * flight share one call every `minGapMs`, and each learns its confirmation within that gap of it.
 * The requests grow with time, not with the runs.
 */
export function createStatusWatch(options: {
  readonly transfers: TransferChain;
  /** The least time between two polls. */
  readonly minGapMs: number;
  /** How long one transaction waits between two of its polls, when it waits alone. */
  readonly slotMs: number;
  readonly now?: () => number;
}): StatusWatch {
  const { transfers, minGapMs, slotMs } = options;
  const now = options.now ?? (() => performance.now());
  interface Waiter {
    readonly since: number;
    readonly dueAt: number;
    resolve(status: SentStatus | undefined): void;
    reject(error: unknown): void;
  }
  const waiting = new Map<string, Waiter[]>();
  let timer: NodeJS.Timeout | undefined;
  let timerAt = Number.POSITIVE_INFINITY;
  let lastPoll = Number.NEGATIVE_INFINITY;

  /** When the next poll goes out, for the transactions waiting now (see above). */
  const schedule = () => {
    if (waiting.size === 0) return;
    let due = Number.POSITIVE_INFINITY;
    let since = Number.POSITIVE_INFINITY;
    for (const waiters of waiting.values()) {
      for (const w of waiters) {
        due = Math.min(due, w.dueAt);
        since = Math.min(since, w.since);
      }
    }
    const shared = since + Math.max(minGapMs, slotMs / waiting.size);
    const at = Math.max(lastPoll + minGapMs, Math.min(due, shared));
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
          since: now(),
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

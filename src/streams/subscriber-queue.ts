/**
 * What one stream subscriber has not yet been sent, bounded: a shared poller offers items to many
 * queues and never waits for any of them, so a consumer that reads slower than items arrive fills
 * its own queue and is ended (`offer` answers false), instead of making memory grow or holding
 * the others back. Producers that can wait (a replay read from the database) wait for room.
 */
export interface SubscriberQueue<T> {
  /**
   * Adds an item. When the queue already holds its bound, adds nothing, ends the queue with a
   * QueueOverflowError (the consumer fell behind) and answers false.
   */
  offer(item: T): boolean;
  /** Resolves once the queue has room (at once when it has). */
  room(): Promise<void>;
  /**
   * The next item; IDLE when none came within `idleMs` (time for a heartbeat). Throws what
   * `fail` was given once the items before it are taken, or the signal's reason when it aborts.
   */
  take(idleMs: number, signal: AbortSignal): Promise<T | typeof IDLE>;
  /** Ends the queue: `take` throws `error` after the items already queued. */
  fail(error: unknown): void;
  readonly size: number;
}

export const IDLE: unique symbol = Symbol("idle");

/** The consumer fell behind by more than the queue's bound. */
export class QueueOverflowError extends Error {
  override readonly name = "QueueOverflowError";
  readonly capacity: number;
  constructor(capacity: number) {
    super(`fell more than ${capacity} messages behind`);
    this.capacity = capacity;
  }
}

export function createSubscriberQueue<T>(options: { readonly capacity: number }): SubscriberQueue<T> {
  const { capacity } = options;
  // A ring would save the shift; queues are short (the bound) and drained as they fill.
  const items: T[] = [];
  let failure: { error: unknown } | undefined;
  let wakeTaker: (() => void) | undefined;
  let roomWaiters: (() => void)[] = [];
  const wake = () => {
    const w = wakeTaker;
    wakeTaker = undefined;
    w?.();
  };
  const fail = (error: unknown) => {
    if (failure !== undefined) return;
    failure = { error };
    const waiters = roomWaiters;
    roomWaiters = [];
    for (const resolve of waiters) resolve();
    wake();
  };
  return {
    offer(item) {
      if (failure !== undefined) return true; // ended: nothing more is sent, nothing to report
      if (items.length >= capacity) {
        fail(new QueueOverflowError(capacity));
        return false;
      }
      items.push(item);
      wake();
      return true;
    },
    room() {
      if (items.length < capacity || failure !== undefined) return Promise.resolve();
      return new Promise<void>((resolve) => roomWaiters.push(resolve));
    },
    async take(idleMs, signal) {
      for (;;) {
        if (items.length > 0) {
          const item = items.shift() as T;
          if (roomWaiters.length > 0 && items.length < capacity) {
            const waiters = roomWaiters;
            roomWaiters = [];
            for (const resolve of waiters) resolve();
          }
          return item;
        }
        if (failure !== undefined) throw failure.error;
        if (signal.aborted) throw signal.reason;
        const woken = await new Promise<boolean>((resolve) => {
          const timer = setTimeout(() => done(false), idleMs);
          const onAbort = () => done(true);
          const done = (value: boolean) => {
            clearTimeout(timer);
            signal.removeEventListener("abort", onAbort);
            wakeTaker = undefined;
            resolve(value);
          };
          wakeTaker = () => done(true);
          signal.addEventListener("abort", onAbort, { once: true });
        });
        if (!woken) return IDLE;
      }
    },
    fail,
    get size() {
      return items.length;
    },
  };
}

/** How deliveries are retried: exponential backoff with jitter, for a bounded time. */
export interface RetrySchedule {
  /** The delay after the first failed attempt. */
  readonly baseMs: number;
  /** No delay is longer. */
  readonly maxMs: number;
  /** Attempts stop this long after the delivery's window began (its event, or its resend). */
  readonly forMs: number;
}

/**
 * The delay after failed attempt n (1, 2, ...): base × 2^(n-1), at most max, then ±20% at random
 * so that endpoints failing together do not retry together. With the defaults (5 s, 4 h, 24 h):
 * 5 s, 10 s, 20 s, 40 s, 80 s, 2.7 min, 5.3 min, 11 min, 21 min, 43 min, 85 min, 2.8 h, then
 * every 4 h: 17 attempts over the day.
 */
export function retryDelayMs(attempt: number, schedule: RetrySchedule, random: () => number): number {
  const exponential = schedule.baseMs * 2 ** Math.min(attempt - 1, 40);
  return Math.round(Math.min(exponential, schedule.maxMs) * (0.8 + 0.4 * random()));
}

/** When attempt n's successor is due, or undefined when the window ends first (the delivery has failed). */
export function nextAttemptAt(
  attempt: number,
  at: Date,
  windowStart: Date,
  schedule: RetrySchedule,
  random: () => number = Math.random,
): Date | undefined {
  const next = at.getTime() + retryDelayMs(attempt, schedule, random);
  return next > windowStart.getTime() + schedule.forMs ? undefined : new Date(next);
}

/**
 * Looks at the store's agents (due or pending), and how long one serves. On a store without indexes
 * (FerretDB) each look reads every agent, so while a backlog drains, polls reuse a recent look
 * instead of asking again.
 */

/** A look at the store's agents: when (real and schedule time), and how long its query took. */
export interface Look {
  /** performance.now() when it began. */
  readonly realMs: number;
  /** Schedule-clock epoch ms when it began (tests move it). */
  readonly nowMs: number;
  tookMs: number;
}

/**
 * A look that took longer is reused for this many times its own duration, so that while a backlog
 * drains, looks at due and pending agents take at most a tenth of the time, however many agents a
 * store without indexes reads for each (on FerretDB, measured: about 0.1 s at 1,000 agents, 0.5 s
 * at 10,000).
 */
export const QUERY_TIME_SHARE = 10;

/**
 * Whether `look` is recent at `at`: within `reuseMs` of it in real and in schedule time (tests move
 * the latter), or longer when the look was slow (see QUERY_TIME_SHARE).
 */
export function isRecent(look: Look | undefined, at: Omit<Look, "tookMs">, reuseMs: number): boolean {
  if (look === undefined) return false;
  const span = Math.max(reuseMs, look.tookMs * QUERY_TIME_SHARE);
  return at.realMs - look.realMs < span && at.nowMs - look.nowMs >= 0 && at.nowMs - look.nowMs < span;
}

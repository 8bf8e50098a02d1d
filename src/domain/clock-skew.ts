/**
 * A lease is taken over only this long after it ended, so a holder whose clock runs a little slow
 * is not cut off: the agent scheduler's slot leases and the webhook outbox's attempt claims alike.
 */
export const CLOCK_SKEW_ALLOWANCE_MS = 1_000;

import type { Logger } from "../logger.ts";

export type RateLimitedLog = (fields: Record<string, unknown>, message: string) => void;

/**
 * A log call that writes at most `perSecond` lines a second; the lines it drops are counted and
 * reported as `suppressed` on the next line written. For events a client controls (malformed
 * requests, refused connections): each one is worth knowing about, but a flood of them must not
 * turn into a flood of log lines. Metrics still count every one.
 */
export function createRateLimitedLog(options: {
  logger: Logger;
  level: "info" | "warn" | "error";
  perSecond: number;
  /** The clock, in ms (tests pass their own). */
  now?: () => number;
}): RateLimitedLog {
  const { logger, level, perSecond, now: clock = Date.now } = options;
  let windowStart = 0;
  let written = 0;
  let suppressed = 0;
  return (fields, message) => {
    if (!logger.isLevelEnabled(level)) return;
    const now = clock();
    if (now - windowStart >= 1000) {
      windowStart = now;
      written = 0;
    }
    if (written >= perSecond) {
      suppressed++;
      return;
    }
    written++;
    logger[level](suppressed === 0 ? fields : { ...fields, suppressed }, message);
    suppressed = 0;
  };
}

/**
 * Delay before retry `attempt` + 1 after attempt `attempt` failed: exponential, capped, with full
 * jitter (a uniformly random share of the exponential step), so that agents that failed together
 * (a dependency blipped) do not retry in lockstep.
 */
export function retryDelayMs(
  attempt: number,
  options: { baseMs: number; maxMs: number; random?: () => number },
): number {
  const random = options.random ?? Math.random;
  const ceiling = Math.min(options.maxMs, options.baseMs * 2 ** Math.max(0, attempt - 1));
  return Math.floor(random() * ceiling);
}

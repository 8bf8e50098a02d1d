/**
 * Resolves after `ms`, or at once when `signal` aborts (never rejects): waits that a stopping
 * scheduler or a lost lease must be able to cut short. `ms` = Infinity waits for the abort only.
 */
export function abortableSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = Number.isFinite(ms) ? setTimeout(resolve, ms) : undefined;
    signal.addEventListener(
      "abort",
      () => {
        clearTimeout(timer);
        resolve();
      },
      { once: true },
    );
  });
}

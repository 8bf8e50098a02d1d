/**
 * The executor's balance, as known from its last reading. The executor pays the fee of every run
 * (and the rent of destinations' token accounts): at 0 SOL every run fails on chain, so the
 * balance is read at start, every `intervalMs`, and soon after runs, and a balance under the floor
 * is said where an operator looks (readiness body, a log line, a metric) rather than only in each
 * run's failure.
 */
export interface ExecutorBalance {
  /** The executor's address: what to fund. */
  readonly address: string;
  /** Lamports at the last reading; undefined before the first one succeeded. */
  lamports(): bigint | undefined;
  /** Why the executor cannot pay fees, from the last reading; undefined when it can (or is unknown). */
  problem(): string | undefined;
  /** Reads the balance now; callers arriving while a read runs share it. Never rejects. */
  refresh(): Promise<void>;
  /** Reads the balance soon, at most once per `minGapMs` however many runs ask (after a run). */
  refreshSoon(): void;
  /** Reads now, then every `intervalMs` until `stop`. */
  start(): void;
  stop(): void;
}

export function createExecutorBalance(options: {
  readonly address: string;
  /** The balance on the chain; may throw (the chain unreachable keeps the last reading). */
  readonly read: (signal: AbortSignal) => Promise<bigint>;
  /** Below this the executor is reported as unable to pay fees (EXECUTOR_MIN_LAMPORTS). */
  readonly minLamports: bigint;
  readonly intervalMs: number;
  /** Bound on one reading. */
  readonly timeoutMs: number;
  /** The least time between two readings asked for by `refreshSoon`. */
  readonly minGapMs?: number;
  /** Told when the executor falls under the floor (`problem` set) or is back above it (undefined). */
  readonly onChange?: (problem: string | undefined, lamports: bigint) => void;
}): ExecutorBalance {
  const { address, minLamports } = options;
  const minGapMs = options.minGapMs ?? 2000;
  let lamports: bigint | undefined;
  let low: boolean | undefined;
  let reading: Promise<void> | undefined;
  let lastReadAt = Number.NEGATIVE_INFINITY;
  let soon: NodeJS.Timeout | undefined;
  let timer: NodeJS.Timeout | undefined;

  const problemOf = (value: bigint) =>
    `the executor cannot pay fees: fund ${address} (it holds ${value} lamports, below EXECUTOR_MIN_LAMPORTS ${minLamports})`;

  const refresh = (): Promise<void> => {
    reading ??= (async () => {
      lastReadAt = performance.now();
      try {
        const value = await options.read(AbortSignal.timeout(options.timeoutMs));
        lamports = value;
        const isLow = value < minLamports;
        if (isLow !== low) {
          // The first reading is told too when it is low: the start-up's log says the truth.
          if (isLow || low !== undefined) options.onChange?.(isLow ? problemOf(value) : undefined, value);
          low = isLow;
        }
      } catch {
        // The chain is unreachable: readiness says so; the last reading stands.
      } finally {
        reading = undefined;
      }
    })();
    return reading;
  };

  return {
    address,
    lamports: () => lamports,
    problem: () => (lamports !== undefined && low === true ? problemOf(lamports) : undefined),
    refresh,
    refreshSoon() {
      if (soon !== undefined) return;
      const wait = Math.max(0, lastReadAt + minGapMs - performance.now());
      soon = setTimeout(() => {
        soon = undefined;
        void refresh();
      }, wait);
      soon.unref();
    },
    start() {
      if (timer !== undefined) return;
      void refresh();
      timer = setInterval(() => void refresh(), options.intervalMs);
      timer.unref();
    },
    stop() {
      clearInterval(timer);
      clearTimeout(soon);
      timer = undefined;
      soon = undefined;
    },
  };
}

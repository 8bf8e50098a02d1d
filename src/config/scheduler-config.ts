import type { ConfigReader } from "./config-reader.ts";

/** The scheduler that activates and runs agents (see src/scheduler/scheduler.ts). */
export interface SchedulerConfig {
  readonly enabled: boolean;
  /** Slots one replica runs at once. */
  readonly concurrency: number;
  readonly pollIntervalMs: number;
  readonly leaseMs: number;
  readonly attemptTimeoutMs: number;
  readonly maxAttempts: number;
  readonly retryBaseMs: number;
  readonly retryMaxMs: number;
  readonly maxConsecutiveFailures: number;
  /**
   * Token accounts of pending agents watched with accountSubscribe (PENDING_WATCH_MAX_ACCOUNTS), so
   * an approval activates its agent as it lands; 0: none, the poll alone activates.
   */
  readonly pendingWatchMaxAccounts: number;
  /** Schedule milliseconds per real millisecond (1: real time). */
  readonly timeScale: number;
  /** The simulated executor's faults, for demos and tests: shares of attempts that fail or hang. */
  readonly simulatedFailureRate: number;
  readonly simulatedHangRate: number;
  readonly simulatedLatencyMs: number;
}

export function readScheduler(reader: ConfigReader): SchedulerConfig {
  const { int, bool, ratio } = reader;
  return {
    enabled: bool("SCHEDULER_ENABLED"),
    concurrency: int("SCHEDULER_CONCURRENCY", 1, 1000),
    pollIntervalMs: int("SCHEDULER_POLL_INTERVAL_MS", 10, 60_000),
    leaseMs: int("SCHEDULER_LEASE_MS", 100, 3_600_000),
    attemptTimeoutMs: int("SCHEDULER_ATTEMPT_TIMEOUT_MS", 10, 3_600_000),
    maxAttempts: int("SCHEDULER_MAX_ATTEMPTS", 1, 100),
    retryBaseMs: int("SCHEDULER_RETRY_BASE_MS", 0, 3_600_000),
    retryMaxMs: int("SCHEDULER_RETRY_MAX_MS", 0, 86_400_000),
    maxConsecutiveFailures: int("SCHEDULER_MAX_CONSECUTIVE_FAILURES", 1, 1000),
    pendingWatchMaxAccounts: int("PENDING_WATCH_MAX_ACCOUNTS", 0, 10_000),
    timeScale: int("SCHEDULE_TIME_SCALE", 1, 10_000_000),
    simulatedFailureRate: ratio("SIMULATED_FAILURE_RATE"),
    simulatedHangRate: ratio("SIMULATED_HANG_RATE"),
    simulatedLatencyMs: int("SIMULATED_LATENCY_MS", 0, 600_000),
  };
}

import type { ConfigReader } from "./config-reader.ts";
import type { HttpLimits } from "./server-config.ts";

/** Server streams (WatchTokenPrices, WatchAgentEvents). */
export interface StreamsConfig {
  /** A heartbeat message after this long without one, so proxies keep idle streams open. */
  readonly heartbeatMs: number;
  /** Streams one caller (API key, or address without one) may hold at once. */
  readonly maxPerKey: number;
  /** Messages a stream may have waiting for its reader; past it the stream ends (resource_exhausted). */
  readonly bufferMessages: number;
  /**
   * A stream whose connection took none of what was written for this long is ended: its reader
   * stopped reading (or vanished without a word), and would hold its slot and its watch for good.
   */
  readonly writeTimeoutMs: number;
  /** How often each process reads the event log for new events (one read for all its watchers). */
  readonly eventPollIntervalMs: number;
  /** Agent events older than this are dropped; a cursor older than that is out_of_range. */
  readonly eventRetentionMs: number;
  /**
   * How often each replica looks for changes of the last `eventRepairWindowMs` whose event is
   * missing (default a minute: each sweep reads four collections by time, which FerretDB answers
   * by decoding every document of each).
   */
  readonly eventRepairIntervalMs: number;
  readonly eventRepairWindowMs: number;
}

/** The stream settings, checked against each other and against the connections' idle timeout. */
export function readStreams(reader: ConfigReader, http: HttpLimits): StreamsConfig {
  const { int, problems } = reader;
  const streams: StreamsConfig = {
    heartbeatMs: int("STREAM_HEARTBEAT_MS", 100, 3_600_000),
    maxPerKey: int("STREAM_MAX_PER_KEY", 1, 1_000_000),
    bufferMessages: int("STREAM_BUFFER_MESSAGES", 1, 100_000),
    writeTimeoutMs: int("STREAM_WRITE_TIMEOUT_MS", 100, 3_600_000),
    eventPollIntervalMs: int("EVENT_POLL_INTERVAL_MS", 10, 60_000),
    eventRetentionMs: int("EVENT_RETENTION_HOURS", 1, 24 * 365) * 3_600_000,
    eventRepairIntervalMs: int("EVENT_REPAIR_INTERVAL_MS", 100, 3_600_000),
    eventRepairWindowMs: int("EVENT_REPAIR_WINDOW_MS", 1_000, 86_400_000),
  };
  if (streams.eventRepairWindowMs < streams.eventRepairIntervalMs) {
    // A change between two sweeps would fall outside both windows.
    problems.push(
      `EVENT_REPAIR_WINDOW_MS must be at least EVENT_REPAIR_INTERVAL_MS (got ${streams.eventRepairWindowMs} and ${streams.eventRepairIntervalMs})`,
    );
  }
  if (streams.heartbeatMs >= http.idleTimeoutMs) {
    // The connection would be closed as idle before its first heartbeat.
    problems.push(
      `STREAM_HEARTBEAT_MS must be below IDLE_TIMEOUT_MS (got ${streams.heartbeatMs} and ${http.idleTimeoutMs})`,
    );
  }
  return streams;
}

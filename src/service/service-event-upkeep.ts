/**
 * The agent event log's upkeep: events past EVENT_RETENTION_HOURS pruned, and changes whose event
 * never made it (a failed append, a process killed in between) announced by the repair.
 */
import type { AppContext } from "../app-context.ts";
import type { Config } from "../config.ts";
import type { Logger } from "../logger.ts";
import { createRateLimitedLog } from "../observability/rate-limited-log.ts";

/** How often old agent events are pruned. */
const EVENT_PRUNE_INTERVAL_MS = 10 * 60_000;

export interface EventUpkeepOptions {
  readonly config: Config;
  readonly logger: Logger;
  readonly context: AppContext;
}

export interface EventUpkeep {
  /** Prunes and repairs now, then on their intervals. */
  start(): void;
  /** Stops the intervals. */
  stop(): void;
  /** Resolves once the repair in flight (if any) has ended. */
  idle(): Promise<void>;
}

export function createEventUpkeep(options: EventUpkeepOptions): EventUpkeep {
  const { config, logger, context } = options;
  // Events past EVENT_RETENTION_HOURS go (every replica prunes; deleting twice is harmless).
  const pruneEvents = () => {
    const before = new Date(Date.now() - config.streams.eventRetentionMs);
    context.events
      .prune(before)
      .catch((error: unknown) => logger.warn({ err: error }, "pruning agent events failed"));
  };
  let pruning: NodeJS.Timeout | undefined;
  // Changes whose event never made it (a failed append, a process killed in between) are
  // announced by every replica's repair; keys make a second announcement the first.
  const repairLog = createRateLimitedLog({ logger, level: "warn", perSecond: 1 });
  let repairing: Promise<void> | undefined;
  const repairEvents = (windowMs: number) => {
    if (context.eventRepair === undefined || repairing !== undefined) return;
    repairing = context.eventRepair
      .repair(new Date(Date.now() - windowMs))
      .then(
        (appended) => {
          if (appended > 0) logger.warn({ appended }, "announced agent changes whose events were missing");
        },
        (error: unknown) =>
          repairLog(
            { err: error instanceof Error ? error.message : String(error) },
            "repairing agent events failed",
          ),
      )
      .finally(() => {
        repairing = undefined;
      });
  };
  let repairTimer: NodeJS.Timeout | undefined;
  return {
    start() {
      pruneEvents();
      pruning = setInterval(pruneEvents, EVENT_PRUNE_INTERVAL_MS).unref();
      // The first sweep covers every kept event's time (all replicas may have been down).
      repairEvents(config.streams.eventRetentionMs);
      repairTimer = setInterval(
        () => repairEvents(config.streams.eventRepairWindowMs),
        config.streams.eventRepairIntervalMs,
      ).unref();
    },
    stop() {
      clearInterval(pruning);
      clearInterval(repairTimer);
    },
    async idle() {
      await repairing;
    },
  };
}

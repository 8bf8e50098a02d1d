import { performance } from "node:perf_hooks";
import { Counter, type Registry } from "prom-client";

/**
 * Gives the memory that start-up and bursts of load leave behind back to the system once the
 * process has gone quiet.
 *
 * V8 grows its young generation to the most `--max-semi-space-size` allows (8 MB with
 * `npm start`'s 4) while modules load or calls pour in, and keeps it; its old generation keeps
 * the pages its garbage lived in. An idle process allocates too little for V8 to shrink either,
 * so it idles as large as its busiest moment. One full collection with V8's memory-reducing
 * ("last resort") flavor compacts the old generation and shrinks the young one to its minimum:
 * measured, the idle service goes from about 84 to 76 MB RSS, and after a gRPC load from its peak
 * to about 103 MB. It takes 35-45 ms of an idle event loop, and the young generation grows again
 * as soon as load needs it.
 *
 * Runs only where the collector is exposed (`npm start` and the image pass `--expose-gc`).
 */
export interface IdleHeapReleaseOptions {
  /** The full, memory-reducing collection. */
  readonly collect: () => void;
  /** The share of the time since the previous call the event loop was busy (0 to 1). */
  readonly utilization?: () => number;
  /** How often the loop is looked at; 1 s. */
  readonly intervalMs?: number;
  /** Busier than this share, an interval counts as load; 2 % (an idle service sits near 0.5 %). */
  readonly busyAbove?: number;
  /** Quiet intervals in a row before a release, so light steady traffic never triggers one; 2. */
  readonly quietIntervals?: number;
  /** The least time between two releases; 60 s. */
  readonly minGapMs?: number;
  readonly now?: () => number;
  /** Where `heap_idle_releases_total` is counted. */
  readonly registry?: Registry;
  /** Told of every release: how long it took and the RSS before and after. */
  readonly onRelease?: (release: { ms: number; rssBefore: number; rssAfter: number }) => void;
}

export interface IdleHeapRelease {
  /** Looks at the interval just past and releases if the process went quiet after work; the timer calls it. */
  tick(): boolean;
  /** Ticks every `intervalMs` (an unref'd timer: it never keeps the process alive). */
  start(): void;
  stop(): void;
}

export function createIdleHeapRelease(options: IdleHeapReleaseOptions): IdleHeapRelease {
  const utilization = options.utilization ?? eventLoopUtilization();
  const intervalMs = options.intervalMs ?? 1_000;
  const busyAbove = options.busyAbove ?? 0.02;
  const quietIntervals = options.quietIntervals ?? 2;
  const minGapMs = options.minGapMs ?? 60_000;
  const now = options.now ?? (() => performance.now());
  const releases = options.registry
    ? new Counter({
        name: "heap_idle_releases_total",
        help: "Full collections run once the process went quiet, giving back memory start-up or load left behind.",
        registers: [options.registry],
      })
    : undefined;
  // Start-up is work: the first quiet stretch releases what loading the modules left.
  let workedSinceRelease = true;
  let quiet = 0;
  let lastRelease = Number.NEGATIVE_INFINITY;
  let timer: NodeJS.Timeout | undefined;

  const tick = (): boolean => {
    if (utilization() > busyAbove) {
      workedSinceRelease = true;
      quiet = 0;
      return false;
    }
    quiet += 1;
    if (!workedSinceRelease || quiet < quietIntervals || now() - lastRelease < minGapMs) return false;
    const started = now();
    const rssBefore = process.memoryUsage.rss();
    options.collect();
    const rssAfter = process.memoryUsage.rss();
    lastRelease = now();
    // The collection's own time is not load: leave it out of the next interval.
    utilization();
    workedSinceRelease = false;
    quiet = 0;
    releases?.inc();
    options.onRelease?.({ ms: lastRelease - started, rssBefore, rssAfter });
    return true;
  };

  return {
    tick,
    start() {
      timer ??= setInterval(tick, intervalMs).unref();
    },
    stop() {
      clearInterval(timer);
      timer = undefined;
    },
  };
}

/** Node's event-loop utilization since the previous call. */
function eventLoopUtilization(): () => number {
  let last = performance.eventLoopUtilization();
  return () => {
    const current = performance.eventLoopUtilization();
    const { utilization } = performance.eventLoopUtilization(current, last);
    last = current;
    return utilization;
  };
}

/**
 * The polling loop: one poll at a time (a slow database must not stack polls up); the next comes
 * after `pollIntervalMs` when the last one found nothing more than it started, and as soon as half
 * the capacity is free again while due work is left, so that a backlog drains at the speed runs
 * finish, a few runs per poll.
 */
import type { UpstreamBound } from "../executor.ts";
import type { RunCapacity } from "./run-capacity.ts";

export interface PollingLoopOptions {
  /** One poll; resolves with whether more due work was left than it could start. */
  readonly poll: (backlog: boolean) => Promise<boolean>;
  readonly capacity: Pick<RunCapacity, "free" | "roomOnFullUpstream">;
  readonly concurrency: number;
  readonly pollIntervalMs: number;
  readonly stopping: () => boolean;
  readonly onError?: ((error: unknown, what: string) => void) | undefined;
}

export interface PollingLoop {
  /** Starts looping (once). */
  start(): void;
  /** One poll now, or the one under way. */
  tick(): Promise<void>;
  /**
   * Due work was just made elsewhere (a trigger order fired): a poll now, or, with one under way
   * (whose look may have come before the work was written), another right after it.
   */
  wake(): void;
  /** The poll under way, if any. */
  polling(): Promise<void> | undefined;
  /**
   * A run ended (or left the count to wait on `upstream`'s answer): with due work left, poll now if
   * enough capacity is free; with due runs left for its full upstream, once half of it is free.
   */
  runEnded(upstream: UpstreamBound | undefined): void;
  /** No poll is scheduled any more. */
  halt(): void;
}

export function createPollingLoop(options: PollingLoopOptions): PollingLoop {
  const { capacity, stopping } = options;
  /** Free capacity at which a backlog is polled for again. */
  const wakeAt = Math.max(1, Math.ceil(options.concurrency / 2));
  /** start() was called: the loop runs. */
  let looping = false;
  let timer: NodeJS.Timeout | undefined;
  let polling: Promise<void> | undefined;
  /** The last poll left due work it had no capacity for. */
  let backlog = false;
  /** Woken during a poll: another follows it. */
  let again = false;

  function tick(): Promise<void> {
    polling ??= options
      .poll(backlog)
      .then(
        (more) => {
          backlog = more;
        },
        (error: unknown) => {
          backlog = false;
          options.onError?.(error, "polling for due agents");
        },
      )
      .finally(() => {
        polling = undefined;
        if (again && !stopping()) {
          again = false;
          void tick();
        }
      });
    return polling;
  }

  function schedulePoll(delayMs: number): void {
    clearTimeout(timer);
    timer = setTimeout(() => {
      timer = undefined;
      void tick().then(() => {
        if (stopping() || !looping) return;
        if (!backlog) schedulePoll(capacity.roomOnFullUpstream() ? 0 : options.pollIntervalMs);
        else if (capacity.free() >= wakeAt) schedulePoll(0);
        // Otherwise the run that frees enough capacity polls (see runEnded); the interval still
        // bounds the wait.
        else schedulePoll(options.pollIntervalMs);
      });
    }, delayMs);
    timer.unref();
  }

  return {
    start() {
      if (looping || stopping()) return;
      looping = true;
      schedulePoll(0);
    },
    tick,
    wake() {
      if (stopping()) return;
      if (polling !== undefined) again = true;
      else void tick();
    },
    polling: () => polling,
    runEnded(upstream) {
      if (!looping || stopping() || polling !== undefined) return;
      if (
        (backlog && capacity.free() >= wakeAt) ||
        (upstream !== undefined && capacity.roomOnFullUpstream())
      ) {
        schedulePoll(0);
      }
    },
    halt() {
      clearTimeout(timer);
      timer = undefined;
    },
  };
}

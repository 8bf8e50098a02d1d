/**
 * The runs in flight on this replica, and the room left for more: `concurrency` runs count at once,
 * but a run waiting on its upstream (Execution.awaitingUpstream, a swap's route) is out of the count
 * while it waits, so that a slow Swap API does not hold the slots idle while transfers are due.
 *
 * Runs per upstream are counted by its name from their claim until the upstream has answered them:
 * at most its `calls`, so that the upstream never refuses one for want of room however many wait
 * out of the count. Hence at most `calls` runs on each upstream are before or at it, and
 * `concurrency` others (a swap past its route among them) run at once.
 */
import type { UpstreamBound } from "../executor.ts";

/** A run in flight: done when it ended, aborted to stop it. */
export interface InFlight {
  readonly done: Promise<void>;
  readonly abort: AbortController;
}

/** Whether a run holds its place on its upstream (it gives it up once answered). */
export interface UpstreamPlace {
  held: boolean;
}

export interface RunCapacity {
  /** Runs in flight, by agent id: one slot of an agent at a time per replica. */
  readonly running: ReadonlyMap<string, InFlight>;
  /** Runs that may start now. */
  free(): number;
  add(agentId: string, run: InFlight): void;
  /** The agent's run ended. */
  remove(agentId: string): void;
  /** Takes a place on `upstream` for a run about to be claimed; false (and remembered) when it is full. */
  enterUpstream(upstream: UpstreamBound): boolean;
  /** A run on `upstream` was answered there, ended, or its claim failed: its place there is free. */
  leaveUpstream(upstream: UpstreamBound): void;
  /** A poll begins: the upstreams found full are forgotten. */
  clearFull(): void;
  /**
   * An upstream the last poll left due runs for has half its room free again (and a slot is free
   * to start them in): a poll now starts them.
   */
  roomOnFullUpstream(): boolean;
  /**
   * The agent's run waits for `work` out of the count: the upstream has room for it. `onFree` is
   * told when a slot comes free (undefined) and when the upstream has answered (the upstream).
   */
  awaitingUpstream(
    agentId: string,
    upstream: UpstreamBound,
    place: UpstreamPlace,
    onFree: (upstream: UpstreamBound | undefined) => void,
  ): <T>(work: () => Promise<T>) => Promise<T>;
}

export function createRunCapacity(options: { readonly concurrency: number }): RunCapacity {
  const running = new Map<string, InFlight>();
  /** Runs (by agent) waiting on their upstream: in flight, but not counted against `concurrency`. */
  const waiting = new Set<string>();
  const busy = () => running.size - waiting.size;
  const onUpstream = new Map<string, number>();
  /** Upstreams the last poll left due agents for, being full. */
  const fullUpstreams = new Map<string, UpstreamBound>();

  const enter = (upstream: UpstreamBound) =>
    onUpstream.set(upstream.name, (onUpstream.get(upstream.name) ?? 0) + 1);
  function leave(upstream: UpstreamBound): void {
    const left = (onUpstream.get(upstream.name) ?? 1) - 1;
    if (left > 0) onUpstream.set(upstream.name, left);
    else onUpstream.delete(upstream.name);
  }

  return {
    running,
    free: () => options.concurrency - busy(),
    add: (agentId, run) => running.set(agentId, run),
    remove(agentId) {
      running.delete(agentId);
      waiting.delete(agentId);
    },
    enterUpstream(upstream) {
      if ((onUpstream.get(upstream.name) ?? 0) >= upstream.calls) {
        fullUpstreams.set(upstream.name, upstream);
        return false;
      }
      enter(upstream);
      return true;
    },
    leaveUpstream: leave,
    clearFull: () => fullUpstreams.clear(),
    roomOnFullUpstream() {
      if (busy() >= options.concurrency) return false;
      for (const upstream of fullUpstreams.values()) {
        const room = upstream.calls - (onUpstream.get(upstream.name) ?? 0);
        if (room >= Math.max(1, Math.ceil(upstream.calls / 2))) return true;
      }
      return false;
    },
    awaitingUpstream(agentId, upstream, place, onFree) {
      return async <T>(work: () => Promise<T>): Promise<T> => {
        if (waiting.has(agentId)) return work();
        waiting.add(agentId);
        // Back for another answer (a swap asking for a smaller route): it takes a place again, even
        // past the room; rare, and a refusal then is an attempt retried.
        if (!place.held) {
          enter(upstream);
          place.held = true;
        }
        // A slot is free while this run waits: due work may start in it.
        onFree(undefined);
        try {
          return await work();
        } finally {
          waiting.delete(agentId);
          // Answered: the run no longer waits on the upstream, and its place there goes to the next
          // due run (a swap's route is asked for once; its signing and confirmation need none).
          if (place.held) {
            place.held = false;
            leave(upstream);
            onFree(upstream);
          }
        }
      };
    },
  };
}

/**
 * A slot's lease, kept while its run lasts: renewed every `renewEveryMs`, well within the lease. A
 * renewal the store refuses means another
 * replica took the slot over (this one stalled past the lease): the run is told to stop, and the
 * lease is gone for good, so nothing more is kept or recorded under it (fencing).
 */
import type { Lease, RunStore } from "../run-store.ts";

export interface KeptLeaseOptions {
  readonly runs: Pick<RunStore, "renew">;
  readonly first: Lease;
  readonly leaseMs: number;
  readonly renewEveryMs: number;
  readonly now: () => Date;
  /** The lease was lost: the run must stop. */
  readonly onLost: () => void;
  readonly onError?: ((error: unknown) => void) | undefined;
}

export interface KeptLease {
  /** The newest renewal; undefined once lost. */
  current(): Lease | undefined;
  /** Stops renewing (the run ended). */
  stop(): void;
}

export function keepLease(options: KeptLeaseOptions): KeptLease {
  let lease: Lease | undefined = options.first;
  const heartbeat = setInterval(() => {
    const held = lease;
    if (held === undefined) return;
    options.runs.renew(held, { now: options.now(), leaseMs: options.leaseMs }).then(
      (renewed) => {
        lease = renewed;
        if (renewed === undefined) options.onLost();
      },
      (error: unknown) => options.onError?.(error),
    );
  }, options.renewEveryMs);
  return {
    current: () => lease,
    stop: () => clearInterval(heartbeat),
  };
}

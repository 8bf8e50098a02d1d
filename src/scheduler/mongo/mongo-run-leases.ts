/** The run store's leases: a slot claimed by one holder at a time, renewed, released, taken over. */
import type { Collection } from "mongodb";
import { CLOCK_SKEW_ALLOWANCE_MS } from "../../domain/clock-skew.ts";
import type { Lease, RunStore, SlotRef } from "../run-store.ts";
import { type ClaimDoc, claimId, type FenceDoc, fenceId, type RunDoc, runKey } from "./mongo-run-docs.ts";
import { insertAll, insertOnce } from "./mongo-run-inserts.ts";

export interface MongoRunLeasesOptions {
  readonly claims: Collection<ClaimDoc>;
  readonly runs: Collection<RunDoc>;
  /** Runs one operation under the store's guard, after its indexes exist. */
  readonly run: <T>(op: () => Promise<T>) => Promise<T>;
}

export type MongoRunLeases = Pick<RunStore, "claim" | "renew" | "release"> & {
  /** True while `lease` is the newest generation and its time has not run out. */
  holds(lease: Lease, now: Date): Promise<boolean>;
};

export function createMongoRunLeases(options: MongoRunLeasesOptions): MongoRunLeases {
  const { claims, runs, run } = options;
  /**
   * The newest lease generation of a slot, found by `_id` from generation 0 up: point lookups that
   * every server answers from its `_id` index (a query sorted by generation made FerretDB scan
   * every claim ever made on each claim). A slot has one generation, plus one per take-over. The
   * walk stops at a generation whose lease still runs at `now`: a later one is inserted only once
   * it has run out, and a superseded holder cannot renew.
   */
  async function newestClaim(slot: SlotRef, now: Date): Promise<ClaimDoc | null> {
    let newest: ClaimDoc | null = null;
    for (let generation = 0; ; generation++) {
      const doc = await claims.findOne({ _id: claimId(slot, generation) });
      if (doc === null) return newest;
      if (now.getTime() < doc.leaseUntil.getTime() + CLOCK_SKEW_ALLOWANCE_MS) return doc;
      newest = doc;
    }
  }

  /** True while `lease` is the newest generation and its time has not run out. */
  async function holds(lease: Lease, now: Date): Promise<boolean> {
    if (now.getTime() >= lease.leaseUntil.getTime()) return false;
    const newer = await claims.findOne(
      { _id: claimId(lease, lease.generation + 1) },
      { projection: { _id: 1 } },
    );
    return newer === null;
  }

  return {
    holds,
    claim: (slot, { worker, now, leaseMs }) =>
      run(async () => {
        const leaseOf = (generation: number): Lease => ({
          agentId: slot.agentId,
          owner: slot.owner,
          scheduledAt: slot.scheduledAt,
          generation,
          worker,
          leaseUntil: new Date(now.getTime() + leaseMs),
        });
        // A slot nobody claimed yet (the usual case) is won by one insert. Only a slot that was
        // claimed before can be held, settled or taken over.
        const first = leaseOf(0);
        if (await insertOnce(claims, { _id: claimId(slot, 0), ...first })) return first;
        const latest = await newestClaim(slot, now);
        if (latest === null || now.getTime() < latest.leaseUntil.getTime() + CLOCK_SKEW_ALLOWANCE_MS) {
          return undefined;
        }
        if ((await runs.findOne({ _id: runKey(slot, "settled") }, { projection: { _id: 1 } })) !== null) {
          return undefined;
        }
        const lease = leaseOf(latest.generation + 1);
        if (!(await insertOnce(claims, { _id: claimId(slot, lease.generation), ...lease }))) return undefined;
        // Fence every older generation, so none of them can settle from now on. A fence that is
        // there already was put by a settle racing this take-over: then the slot may be settled.
        const fences = Array.from({ length: lease.generation }, (_, g) => ({
          _id: fenceId(slot, g),
          at: now,
        }));
        const fenced = await insertAll(runs as unknown as Collection<FenceDoc>, fences);
        if (
          !fenced &&
          (await runs.findOne({ _id: runKey(slot, "settled") }, { projection: { _id: 1 } })) !== null
        ) {
          return undefined;
        }
        return lease;
      }),
    renew: (lease, { now, leaseMs }) =>
      run(async () => {
        if (!(await holds(lease, now))) return undefined;
        const leaseUntil = new Date(now.getTime() + leaseMs);
        await claims.updateOne({ _id: claimId(lease, lease.generation) }, { $set: { leaseUntil } });
        return { ...lease, leaseUntil };
      }),
    release: (lease) =>
      run(async () => {
        await claims.updateOne(
          { _id: claimId(lease, lease.generation) },
          { $set: { leaseUntil: new Date(0) } },
        );
      }),
  };
}

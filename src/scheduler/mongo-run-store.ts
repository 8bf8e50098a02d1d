/**
 * The MongoDB RunStore (MongoDB and FerretDB alike): see run-store.ts for the rules. Every
 * decision two replicas can race on is an insert of a unique `_id`; the only update is a holder
 * extending its own lease document, which nobody else writes.
 *
 * Reads on the scheduler's path are by `_id`: FerretDB pushes no other filter down (it decodes
 * every document of the collection for any other query), and MongoDB answers them from the `_id`
 * index whatever the collection holds. Queries by field are left to history pages, take-overs and
 * repairs.
 */

import type { Collection, Db } from "mongodb";
import { indexedRun } from "../agent/mongo-indexed-run.ts";
import type { ClaimDoc, RunDoc, TransactionDoc } from "./mongo/mongo-run-docs.ts";
import { createMongoRunJournal } from "./mongo/mongo-run-journal.ts";
import { createMongoRunLeases } from "./mongo/mongo-run-leases.ts";
import { createMongoRunRecords } from "./mongo/mongo-run-records.ts";
import type { RunStore } from "./run-store.ts";

const WRITE_CONCERN = { w: "majority" } as const;

export interface MongoRunStoreOptions {
  readonly db: Db;
  /** Prepended to the collection names (`agent_run_claims`, `agent_runs`, `agent_run_transactions`). */
  readonly collectionPrefix?: string;
  /**
   * Runs one store operation: connects, bounds it in time and maps an unreachable database to the
   * domain's UnavailableError. The agent store's guard, so both stores fail alike.
   */
  readonly guard: <T>(op: () => Promise<T>) => Promise<T>;
  /** Server-side bound on the queries that can scan (history pages, counts). */
  readonly maxTimeMS?: number;
}

export function createMongoRunStore(options: MongoRunStoreOptions): RunStore {
  const { db, guard } = options;
  const bounded = { maxTimeMS: options.maxTimeMS ?? 5_000 };
  const prefix = options.collectionPrefix ?? "";
  const claims: Collection<ClaimDoc> = db.collection(`${prefix}agent_run_claims`, {
    writeConcern: WRITE_CONCERN,
  });
  const runs: Collection<RunDoc> = db.collection(`${prefix}agent_runs`, { writeConcern: WRITE_CONCERN });
  const sent: Collection<TransactionDoc> = db.collection(`${prefix}agent_run_transactions`, {
    writeConcern: WRITE_CONCERN,
  });

  const run = indexedRun(guard, async () => {
    await claims.createIndex({ agentId: 1, scheduledAt: 1, generation: -1 }, { name: "slot_generation" });
    await runs.createIndex(
      { owner: 1, agentId: 1, scheduledAt: -1, attempt: -1 },
      { name: "owner_agent_slot_attempt" },
    );
    await sent.createIndex({ agentId: 1, scheduledAt: 1 }, { name: "agent_slot" });
  });

  const leases = createMongoRunLeases({ claims, runs, run });
  const { holds } = leases;
  return {
    claim: leases.claim,
    renew: leases.renew,
    release: leases.release,
    ...createMongoRunRecords({ runs, bounded, run, holds }),
    ...createMongoRunJournal({ sent, bounded, run, holds }),
    async close() {},
  };
}

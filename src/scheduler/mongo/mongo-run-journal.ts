/** The run store's journal of sent transactions, per slot. */
import type { Collection } from "mongodb";
import type { Lease, RunStore } from "../run-store.ts";
import type { TransactionDoc } from "./mongo-run-docs.ts";
import { insertOnce } from "./mongo-run-inserts.ts";

export interface MongoRunJournalOptions {
  readonly sent: Collection<TransactionDoc>;
  /** Server-side bound on the queries that can scan. */
  readonly bounded: { readonly maxTimeMS: number };
  /** Runs one operation under the store's guard, after its indexes exist. */
  readonly run: <T>(op: () => Promise<T>) => Promise<T>;
  /** True while `lease` is the newest generation and its time has not run out. */
  readonly holds: (lease: Lease, now: Date) => Promise<boolean>;
}

export type MongoRunJournal = Pick<RunStore, "recordTransaction" | "transactions">;

export function createMongoRunJournal(options: MongoRunJournalOptions): MongoRunJournal {
  const { sent, bounded, run, holds } = options;
  return {
    recordTransaction: (lease, transaction, { now }) =>
      run(async () => {
        // The insert comes first and the fence after it: a holder that took the slot over reads the
        // journal after inserting its own lease, so it either sees this transaction, or this
        // holder sees its lease here and does not send.
        await insertOnce(sent, {
          _id: JSON.stringify([lease.agentId, lease.scheduledAt.getTime(), "tx", transaction.signature]),
          agentId: lease.agentId,
          owner: lease.owner,
          scheduledAt: lease.scheduledAt,
          signature: transaction.signature,
          lastValidBlockHeight: transaction.lastValidBlockHeight.toString(),
          transaction: transaction.transaction,
          generation: lease.generation,
          recordedAt: now,
        });
        return (await holds(lease, now)) ? "recorded" : "lease_lost";
      }),
    transactions: (slot) =>
      run(async () => {
        const docs = await sent
          .find({ agentId: slot.agentId, scheduledAt: slot.scheduledAt }, bounded)
          .sort({ generation: 1, recordedAt: 1 })
          .toArray();
        return docs.map((doc) => ({
          signature: doc.signature,
          lastValidBlockHeight: BigInt(doc.lastValidBlockHeight),
          transaction: doc.transaction,
          generation: doc.generation,
          recordedAt: doc.recordedAt,
        }));
      }),
  };
}

/**
 * The slot's journal (ExecutionJournal): the transactions signed for the slot, kept under the
 * newest renewal of its lease, and the agent's successes earlier on the slot's UTC day.
 *
 * What it holds is known without asking the store when it can be: a first lease (generation 0) is
 * the slot's first holder, so no transaction was kept for the slot but those this run keeps itself;
 * a taker reads the journal once, after its claim, and adds its own (an older holder that keeps one
 * later finds the newer lease and does not send it). A keep whose outcome is unknown (the database
 * failed) makes the next look read the store again.
 */
import type { AgentRecord, AgentStore } from "../../agent/agent-store.ts";
import type { ExecutionJournal } from "../executor.ts";
import type { Lease, RunRecord, RunStore, SentTransaction, SlotRef } from "../run-store.ts";

export interface SlotJournalOptions {
  readonly runs: Pick<RunStore, "transactions" | "recordTransaction" | "succeededToday">;
  /** The agent as its slot was claimed. */
  readonly agent: AgentRecord;
  /** The lease the slot was claimed with. */
  readonly first: Lease;
  /** The newest renewal of the lease; undefined once it is lost. */
  readonly lease: () => Lease | undefined;
  /** The agent's slot before `slot` (see AgentSlots.before). */
  readonly slotBefore: (agent: AgentRecord, slot: Date) => Date | undefined;
  /** Reads the agent again for a run about to sign; absent: the agent as claimed is used. */
  readonly get?: AgentStore["get"] | undefined;
  readonly now: () => Date;
}

export interface SlotJournal extends ExecutionJournal {
  /**
   * The day's earlier successes, when this slot asked for them (undefined otherwise, or when they
   * could not be read): they travel with the settling run (see RunStore.record).
   */
  dayBefore(): Promise<readonly RunRecord[] | undefined> | undefined;
}

export function createSlotJournal(options: SlotJournalOptions): SlotJournal {
  const { runs, agent, first, lease, now } = options;
  const slot: SlotRef = first;
  let known: SentTransaction[] | undefined = first.generation === 0 ? [] : undefined;
  let today: Promise<readonly RunRecord[]> | undefined;
  return {
    async transactions() {
      known ??= [...(await runs.transactions(slot))];
      return [...known];
    },
    async record(transaction) {
      const held = lease();
      if (held === undefined) return false;
      const at = now();
      let kept: "recorded" | "lease_lost";
      try {
        kept = await runs.recordTransaction(held, transaction, { now: at });
      } catch (error) {
        known = undefined;
        throw error;
      }
      // Kept either way: the insert comes before the lease check.
      if (known !== undefined && !known.some((t) => t.signature === transaction.signature)) {
        known.push({ ...transaction, generation: held.generation, recordedAt: at });
      }
      return kept === "recorded";
    },
    succeededToday() {
      // Every earlier slot settled before the agent came to this one, and lastRunAt is when the
      // last of them finished: before this UTC day began, none of them is on it. Asked once a
      // slot (the day's earlier slots are settled), and handed to its settle (see RunStore).
      const dayStart = new Date(slot.scheduledAt);
      dayStart.setUTCHours(0, 0, 0, 0);
      today ??= (
        (agent.lastRunAt?.getTime() ?? 0) < dayStart.getTime()
          ? Promise.resolve([])
          : runs.succeededToday(slot, options.slotBefore(agent, slot.scheduledAt))
      ).catch((error: unknown) => {
        today = undefined;
        throw error;
      });
      return today;
    },
    async stillWanted() {
      if (lease() === undefined) return false;
      const current = options.get === undefined ? agent : await options.get(slot.owner, slot.agentId);
      return lease() !== undefined && current !== undefined && current.status === "active";
    },
    dayBefore: () => today?.catch(() => undefined),
  };
}

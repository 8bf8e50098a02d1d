/**
 * Each owner's agents counted as the caps count them (held: pending, active and paused;
 * pending), under the owner as `_id`: a count is a point read, which FerretDB answers from its
 * `_id` index, where counting the agents themselves reads every agent (seconds at 10,000).
 * Moved by $inc after each create, status change and delete made through the store. A crash
 * between an agent's write and its tally's leaves the tally off by that one change: caps are
 * limits against floods, not balances.
 */
import type { Collection } from "mongodb";
import { type AgentStatus, TERMINAL_STATUSES } from "../agent-store.ts";
import { isDuplicateKey } from "../mongo-errors.ts";
import type { AgentDoc, TallyDoc } from "./mongo-agent-docs.ts";

export interface MongoAgentTalliesOptions {
  readonly tallies: Collection<TallyDoc>;
  readonly agents: Collection<AgentDoc>;
  /** Server-side bound on the first count, which reads the owner's agents. */
  readonly bounded: { readonly maxTimeMS: number };
}

export interface MongoAgentTallies {
  /** Moves `owner`'s tally from an agent's status `before` to `after` (undefined: no agent). */
  retally(owner: string, before: AgentStatus | undefined, after: AgentStatus | undefined): Promise<void>;
  /** The owner's agents as the caps count them. */
  countOf(owner: string): Promise<{ held: number; pending: number }>;
}

export function createMongoAgentTallies(options: MongoAgentTalliesOptions): MongoAgentTallies {
  const { tallies, agents, bounded } = options;
  const weightOf = (status: AgentStatus | undefined) => ({
    held: status === undefined || TERMINAL_STATUSES.has(status) ? 0 : 1,
    pending: status === "pending" ? 1 : 0,
  });
  /**
   * Tally changes of one owner in flight here, one after another: FerretDB's $inc is a read and a
   * write, and two at once lose one (MongoDB's is atomic). Across replicas on FerretDB, changes of
   * one owner at the same moment may still lose one; see the header.
   */
  const tallying = new Map<string, Promise<void>>();
  /** Moves `owner`'s tally from an agent's status `before` to `after` (undefined: no agent). */
  function retally(owner: string, before: AgentStatus | undefined, after: AgentStatus | undefined) {
    const from = weightOf(before);
    const to = weightOf(after);
    const held = to.held - from.held;
    const pending = to.pending - from.pending;
    if (held === 0 && pending === 0) return Promise.resolve();
    const done = (tallying.get(owner) ?? Promise.resolve()).then(() => tally(owner, { held, pending }));
    tallying.set(owner, done);
    void done.finally(() => {
      if (tallying.get(owner) === done) tallying.delete(owner);
    });
    return done;
  }
  async function tally(owner: string, change: { held: number; pending: number }): Promise<void> {
    const inc = { $inc: change };
    try {
      await tallies.updateOne({ _id: owner }, inc, { upsert: true }).catch(async (err: unknown) => {
        // Two first changes of one owner raced to insert its tally: it exists now.
        if (!isDuplicateKey(err)) throw err;
        await tallies.updateOne({ _id: owner }, inc);
      });
    } catch {
      // The agent's own write is done and stands; its tally is one change off (see the header).
    }
  }

  async function countOf(owner: string): Promise<{ held: number; pending: number }> {
    const tally = await tallies.findOne({ _id: owner });
    if (tally?.counted === true) {
      return { held: Math.max(0, tally.held), pending: Math.max(0, tally.pending) };
    }
    // The owner's first count (agents made before tallies existed, or changes tallied before
    // it): the agents themselves, once, then the tally goes on from there.
    const groups = await agents
      .aggregate<{ _id: AgentStatus; n: number }>(
        [{ $match: { owner } }, { $group: { _id: "$status", n: { $sum: 1 } } }],
        bounded,
      )
      .toArray();
    const of = (status: AgentStatus) => groups.find((g) => g._id === status)?.n ?? 0;
    const counts = { held: of("pending") + of("active") + of("paused"), pending: of("pending") };
    await tallies
      .updateOne(
        { _id: owner, counted: { $ne: true } },
        { $set: { ...counts, counted: true } },
        { upsert: true },
      )
      .catch((err: unknown) => {
        // Another replica counted first: its tally stands.
        if (!isDuplicateKey(err)) throw err;
      });
    return counts;
  }

  return { retally, countOf };
}

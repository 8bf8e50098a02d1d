import type { Collection, Db, Document } from "mongodb";
import { indexedRun } from "../agent/mongo-indexed-run.ts";
import type { RunRecord } from "../scheduler/run-store.ts";
import { createdEvent, deletedEvent, statusEvent } from "./announcing-agent-store.ts";
import type { EventLog, NewEvent } from "./event-log.ts";
import { runFinishedEvent, runStartedEvent } from "./run-announcer.ts";

export interface EventRepair {
  /** Appends the events of changes made since `since` whose event is missing; resolves with how many. */
  repair(since: Date): Promise<number>;
}

/**
 * Changes looked at per kind and sweep, oldest first, by default; and keys looked up per query.
 * A window that holds more is worked through over the next sweeps (see `resumeFrom`).
 */
const PAGE = 1_000;
const KEYS_PER_QUERY = 1_000;

/**
 * Closes the window between a change and its event on MongoDB, which has no transaction to write
 * both at once here (FerretDB has none): every change leaves a durable trace written with the
 * change itself, and this sweep appends the event of each trace whose event is missing, under the
 * key the writer would have used (so a writer that was only slow is not announced twice):
 *
 * - a status change: its version claim (agent_versions), which carries the change and its event
 *   (`announced`); announced only once the change has landed (the agent's version reached the
 *   claim's), never for a claim whose write never happened;
 * - a creation: the agent, by `createdAt`;
 * - a deletion: its tombstone, once the agent is gone;
 * - a run: its record, by `finishedAt` (run.started first when that is missing too).
 *
 * Repaired events come after events appended meanwhile, in log order; their `at` keeps the time of
 * the change. Changes of an agent that was deleted since (its claims go with it) stay unannounced
 * but for the deletion itself.
 *
 * A sweep is bounded: at most `page` changes of each kind, oldest first. When a kind fills its
 * page, the next sweep of this process goes on from the last change it looked at (if that is
 * still in its window) instead of from the window's start, so a window busier than a page is
 * covered over a few sweeps rather than only ever in its oldest part.
 */
export function createMongoEventRepair(options: {
  readonly db: Db;
  readonly collectionPrefix?: string;
  readonly log: EventLog;
  /** The stores' guard: connected, bounded, unavailability mapped. */
  readonly guard?: <T>(op: () => Promise<T>) => Promise<T>;
  /** Changes looked at per kind and sweep (tests make it small). */
  readonly page?: number;
}): EventRepair {
  const { db, log } = options;
  const guard = options.guard ?? (<T>(op: () => Promise<T>) => op());
  const prefix = options.collectionPrefix ?? "";
  const agents: Collection<Document> = db.collection(`${prefix}agents`);
  const versions: Collection<Document> = db.collection(`${prefix}agent_versions`);
  const tombstones: Collection<Document> = db.collection(`${prefix}agent_tombstones`);
  const runs: Collection<Document> = db.collection(`${prefix}agent_runs`);
  const page = options.page ?? PAGE;
  /** Per kind: the time of the last change a full page ended at, where the next sweep goes on. */
  const resumeFrom = new Map<string, Date>();
  /**
   * Up to a page of one kind's documents whose `field` is in the sweep's window, oldest first,
   * going on from the last full page.
   */
  const pageOf = async (
    kind: string,
    collection: Collection<Document>,
    field: string,
    since: Date,
    filter: Document = {},
    projection?: Document,
  ): Promise<Document[]> => {
    const resume = resumeFrom.get(kind);
    // After the last change of a full page; a change made in that same millisecond but left out
    // of it is looked at once the window's backlog is through and sweeps start at `since` again.
    const range = resume !== undefined && resume > since ? { $gt: resume } : { $gte: since };
    const docs = await collection
      .find({ ...filter, [field]: range }, projection === undefined ? {} : { projection })
      .sort({ [field]: 1 })
      .limit(page)
      .toArray();
    const last = docs.at(-1)?.[field] as Date | undefined;
    if (docs.length < page || last === undefined) resumeFrom.delete(kind);
    else resumeFrom.set(kind, last);
    return docs;
  };

  const run = indexedRun(guard, async () => {
    await versions.createIndex({ claimedAt: 1 }, { name: "claimedAt" });
    await agents.createIndex({ createdAt: 1 }, { name: "createdAt" });
    await tombstones.createIndex({ deletedAt: 1 }, { name: "deletedAt" });
    await runs.createIndex({ finishedAt: 1 }, { name: "finishedAt" });
  });

  /** Appends the candidates whose key is not logged yet, in the order given. */
  const appendMissing = async (candidates: readonly NewEvent[]): Promise<number> => {
    let appended = 0;
    for (let i = 0; i < candidates.length; i += KEYS_PER_QUERY) {
      const chunk = candidates.slice(i, i + KEYS_PER_QUERY);
      const logged = await log.loggedKeys(chunk.map((e) => e.key));
      for (const event of chunk) {
        if (logged.has(event.key)) continue;
        await log.append(event);
        appended++;
      }
    }
    return appended;
  };

  const statusChanges = async (since: Date): Promise<NewEvent[]> => {
    const claims = await pageOf("status", versions, "claimedAt", since, {
      "change.set.announced": { $exists: true },
    });
    const ids = [...new Set(claims.map((c) => c.agentId as string))];
    const docs = new Map(
      (
        await agents
          .find({ _id: { $in: ids } } as Document, { projection: { owner: 1, version: 1 } })
          .toArray()
      ).map((d) => [d._id as unknown as string, d]),
    );
    const events: NewEvent[] = [];
    for (const claim of claims) {
      const doc = docs.get(claim.agentId as string);
      // Landed: the agent moved to the claim's version (or past it). A claim above the agent's
      // version was abandoned (or is being written right now): its change did not happen (yet).
      if (doc === undefined || ((doc.version as number | undefined) ?? 0) < (claim.version as number))
        continue;
      const set = claim.change.set as { announced: { type: string; at: Date }; failureReason?: string };
      events.push(
        statusEvent(doc.owner as string, claim.agentId as string, set.announced, set.failureReason),
      );
    }
    return events;
  };

  const creations = async (since: Date): Promise<NewEvent[]> => {
    const docs = await pageOf("creation", agents, "createdAt", since, {}, { owner: 1, createdAt: 1 });
    return docs.map((d) => createdEvent(d.owner as string, d._id as unknown as string, d.createdAt as Date));
  };

  const deletions = async (since: Date): Promise<NewEvent[]> => {
    const stones = await pageOf("deletion", tombstones, "deletedAt", since);
    const ids = stones.map((t) => t._id as unknown as string);
    // A tombstone whose agent still exists is a deletion that did not happen (its process died
    // between the two writes): nothing to announce.
    const alive = new Set(
      (await agents.find({ _id: { $in: ids } } as Document, { projection: { _id: 1 } }).toArray()).map(
        (d) => d._id as unknown as string,
      ),
    );
    return stones
      .filter((t) => !alive.has(t._id as unknown as string))
      .map((t) => deletedEvent(t.owner as string, t._id as unknown as string, t.deletedAt as Date));
  };

  const runEvents = async (since: Date): Promise<NewEvent[]> => {
    const records = await pageOf("run", runs, "finishedAt", since);
    return records.flatMap((doc) => {
      const run = doc as unknown as RunRecord;
      return [runStartedEvent(run, run.attempt, run.startedAt), runFinishedEvent(run)];
    });
  };

  return {
    repair: (since) =>
      run(async () => {
        // Creations before the changes of the same agents, deletions last.
        let appended = 0;
        for (const kind of [creations, statusChanges, runEvents, deletions]) {
          appended += await appendMissing(await kind(since));
        }
        return appended;
      }),
  };
}

/**
 * Read-modify-write of one agent document that never loses a concurrent update, on MongoDB and on
 * FerretDB (whose conditional updates are not atomic under concurrency, so they cannot decide a
 * race). Every change moves the agent from version v to v + 1, and the right to make that move is
 * an insert of the unique `_id` (agent, v + 1) into a versions collection: of two writers that read
 * version v (a pause and a run finishing, say), one inserts it and writes; the other re-reads the
 * newer state, re-applies its change to it, and claims v + 2.
 *
 * A writer that won the claim and then died before writing would leave the agent stuck at v. The
 * claim therefore carries the change itself, and a later writer that finds a claim older than
 * `rollForwardAfterMs` on an agent still at v applies it (roll forward) before going on.
 *
 * Reads and the winner's write name the document by `_id` alone: FerretDB pushes no other filter
 * down (any other one decodes the whole collection), and its conditional updates are not atomic
 * anyway, so the claim is what serialises writers. A winner writes only while its claim is well
 * within `rollForwardAfterMs` of its making; one that stalled past half of it writes under the
 * version condition instead, as roll-forwards do, so that a late write cannot land on a state
 * that moved on. A caller that read the document a moment ago (`known`) saves the first read: a
 * stale copy only costs the claim it fails to win.
 */
import { randomUUID } from "node:crypto";
import type { Collection, Document } from "mongodb";
import { isDuplicateKey } from "./mongo-errors.ts";

/** Bound on re-reads when other writers keep winning; only reached under pathological churn. */
const MAX_ROUNDS = 50;
/** Claims kept behind the newest version; older ones are deleted now and then. */
const CLAIMS_KEPT = 100;

/** A change to some fields: `$set` values, and fields to remove. */
export interface FieldChange {
  readonly set: Record<string, unknown>;
  readonly unset: readonly string[];
}

interface VersionDoc {
  /** JSON [agentId, version]. */
  _id: string;
  agentId: string;
  version: number;
  change: FieldChange;
  claimedAt: Date;
  /** Tells the claimer's own claim from a later one with the same version. */
  nonce: string;
}

export interface VersionedDoc extends Document {
  _id: string;
  /** Absent on documents written before versions existed: version 0. */
  version?: number;
}

export interface VersionedUpdateOptions<D extends VersionedDoc> {
  readonly docs: Collection<D>;
  readonly versions: Collection<Document>;
  readonly id: string;
  /** Whether the caller may change this document (an owner check); a refused one reads as missing. */
  readonly accept?: (doc: D) => boolean;
  /** The document as the caller read it a moment ago, tried before reading it again. */
  readonly known?: D;
  /** Returns the change to make given the current document, or undefined to make none. */
  readonly change: (current: D) => FieldChange | undefined;
  readonly now: () => Date;
  /** A claim this old whose write never landed was abandoned by a writer that died. */
  readonly rollForwardAfterMs: number;
}

/**
 * Applies `change` to the current document. Resolves with the document as written (or as found,
 * when `change` made none), or undefined when it does not exist (any more). Errors `change`
 * throws (a transition that makes no sense) propagate.
 */
export async function versionedUpdate<D extends VersionedDoc>(
  options: VersionedUpdateOptions<D>,
): Promise<D | undefined> {
  const { docs, id, now } = options;
  const versions = options.versions as unknown as Collection<VersionDoc>;
  const accept = options.accept ?? (() => true);
  const read = async (): Promise<D | undefined> => {
    const doc = (await docs.findOne({ _id: id } as never)) as D | null;
    return doc !== null && accept(doc) ? doc : undefined;
  };
  let known = options.known !== undefined && accept(options.known) ? options.known : undefined;
  for (let round = 0; round < MAX_ROUNDS; round++) {
    // A known copy is only ever a guess at the state to claim from; "no change" needs the real one.
    let current = known;
    let change = current === undefined ? undefined : options.change(current);
    const guessed = change !== undefined;
    known = undefined;
    if (current === undefined || change === undefined) {
      current = await read();
      if (current === undefined) return undefined;
      change = options.change(current);
      if (change === undefined) return current;
    }
    const version = current.version ?? 0;
    const claim: VersionDoc = {
      _id: JSON.stringify([current._id, version + 1]),
      agentId: current._id,
      version: version + 1,
      change,
      claimedAt: now(),
      nonce: randomUUID(),
    };
    try {
      await versions.insertOne(claim);
    } catch (err) {
      if (!isDuplicateKey(err)) throw err;
      // A stale guess re-reads at once; a race lost on a fresh read lets the winner write first.
      if (guessed) continue;
      await rollForwardIfAbandoned(options, versions, current._id, version);
      await pause(round);
      continue;
    }
    // Well within the roll-forward age, nobody else may write this claim: by `_id` alone. Past
    // half of it (this writer stalled), only onto the version it claimed from.
    const fresh = now().getTime() - claim.claimedAt.getTime() < options.rollForwardAfterMs / 2;
    if (!(await write(docs, current._id, version, change, fresh ? "any" : "claimed"))) {
      // The document moved on without us. Either a writer that found our claim abandoned (we were
      // that slow) rolled it forward, and our change is in; or we claimed a version whose claim had
      // been cleared away long after it was used (we read a stale state), and it is not: try again.
      // Or it is gone.
      const ours = await versions.findOne({ _id: claim._id });
      if (ours?.nonce === claim.nonce) return read();
      continue;
    }
    // Old claims are history; dropping them is housekeeping only. Recent ones stay: a writer
    // that read version v and then stalled must find claim v + 1 taken (and re-read) rather than
    // insert it again and believe its stale write landed.
    if (version % CLAIMS_KEPT === 0 && version > CLAIMS_KEPT) {
      await versions
        .deleteMany({ agentId: current._id, version: { $lt: version - CLAIMS_KEPT } })
        .catch(() => {});
    }
    return applied(current, change, version + 1);
  }
  throw new Error("agent kept changing; gave up applying an update");
}

/** Removes the versions of a deleted agent (housekeeping). */
export async function dropVersions(versions: Collection<Document>, agentId: string): Promise<void> {
  await versions.deleteMany({ agentId });
}

/**
 * Writes version + 1. `onto` "claimed": only over `version` (false when the document is no longer
 * at it); "any": by `_id` alone, for the claim's winner while it is fresh (false when the document
 * is gone).
 */
async function write<D extends VersionedDoc>(
  docs: Collection<D>,
  id: string,
  version: number,
  change: FieldChange,
  onto: "claimed" | "any",
): Promise<boolean> {
  const update: Document = { $set: { ...change.set, version: version + 1 } };
  if (change.unset.length > 0) update.$unset = Object.fromEntries(change.unset.map((f) => [f, ""]));
  const filter =
    onto === "any"
      ? { _id: id }
      : { _id: id, $or: [{ version }, ...(version === 0 ? [{ version: { $exists: false } }] : [])] };
  const result = await docs.updateOne(filter as never, update);
  return result.matchedCount === 1;
}

async function rollForwardIfAbandoned<D extends VersionedDoc>(
  options: VersionedUpdateOptions<D>,
  versions: Collection<VersionDoc>,
  id: string,
  version: number,
): Promise<void> {
  const claim = await versions.findOne({ _id: JSON.stringify([id, version + 1]) });
  if (claim === null) return;
  if (options.now().getTime() - claim.claimedAt.getTime() < options.rollForwardAfterMs) return;
  // The version condition keeps a roll-forward racing another (or a late one) off a newer state.
  await write(options.docs, id, version, claim.change, "claimed");
}

function applied<D extends VersionedDoc>(current: D, change: FieldChange, version: number): D {
  const next: Record<string, unknown> = { ...current, ...change.set, version };
  for (const field of change.unset) delete next[field];
  return next as D;
}

/** A short, growing, jittered pause before re-reading: the winner is writing right now. */
function pause(round: number): Promise<void> {
  const ms = Math.min(50, 2 + round * 2) * (0.5 + Math.random());
  return new Promise((resolve) => setTimeout(resolve, ms));
}

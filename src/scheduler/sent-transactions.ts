import { PreflightFailure, type TransferChain } from "../chain/chain.ts";
import { UnavailableError } from "../domain/errors.ts";
import type { Execution, ExecutionJournal, ExecutionResult, Executor } from "./executor.ts";
import type { SentTransaction } from "./run-store.ts";
import { createStatusWatch } from "./status-watch.ts";

/**
 * Where a slot's transaction ended up: it landed (`err` null) or failed on chain, or it expired
 * unlanded (its blockhash is too old, so it never will land and a new one may be signed).
 */
export type SentOutcome =
  | { readonly kind: "landed"; readonly tx: SentTransaction; readonly slot: bigint }
  | { readonly kind: "failed"; readonly tx: SentTransaction; readonly err: unknown }
  | { readonly kind: "expired" };

/**
 * Points where the exactly-once tests across replicas kill a process. `beforeSend` is awaited,
 * with the kept transaction and the chain's block height to ask, so that a hook can stall the
 * send until that transaction's blockhash has expired.
 */
export interface SendHooks {
  readonly beforeSend?: (
    kept: { readonly lastValidBlockHeight: bigint },
    blockHeight: () => Promise<bigint>,
  ) => void | Promise<void>;
  readonly afterSend?: () => void;
}

/**
 * The exactly-once half of every executor that signs transactions (transfers and swaps alike),
 * over the slot's journal:
 * - `resume` asks the chain about every transaction kept for the slot before anything is signed:
 *   one that landed is the run's outcome; while one may still land (no status, its blockhash still
 *   valid) the newest of those is sent again and followed, never a new one; only when all have
 *   expired (or failed) does it answer undefined, and a new one may be signed;
 * - `send` keeps a new signed transaction in the journal before it goes out (a replica that took
 *   the slot over either sees it or is the reason it is not sent), sends it with the cluster's
 *   preflight (a refused one was not sent and cannot land), and follows it.
 */
export function createSentTransactions(options: {
  transfers: TransferChain;
  /** How long a followed transaction waits at most for its next status: a slot. */
  pollMs?: number;
  /** The least time between two status polls, which carry every followed transaction at once. */
  statusGapMs?: number;
  hooks?: SendHooks;
}) {
  const { transfers } = options;
  const pollMs = options.pollMs ?? 400;
  const watch = createStatusWatch({
    transfers,
    minGapMs: options.statusGapMs ?? STATUS_GAP_MS,
    slotMs: pollMs,
  });

  /** Waits for a sent transaction: its success, its failure, or its expiry; sends it again meanwhile. */
  async function follow(tx: SentTransaction, signal: AbortSignal, justSent = false): Promise<SentOutcome> {
    let sentAt = performance.now();
    // Just sent, a transaction cannot have expired: its first status needs no block height. It
    // lands in the chain's working slot and is confirmed when the next slot comes (on a cluster as
    // on the embedded chain), so its first status is due a slot later; a poll the other runs in
    // flight make sooner carries it too. Followed again after a restart, its status is asked at once.
    let first = true;
    for (;;) {
      const height = first && justSent ? undefined : await transfers.getBlockHeight(signal);
      const status = await watch.next(tx.signature, first && !justSent ? 0 : pollMs, signal);
      first = false;
      if (status !== undefined) {
        return status.err === null
          ? { kind: "landed", tx, slot: status.slot }
          : { kind: "failed", tx, err: status.err };
      }
      // The height was read before the status: past it with no status, the transaction can no
      // longer land, and the next attempt signs a new one.
      if (height !== undefined && height > tx.lastValidBlockHeight) return { kind: "expired" };
      if (performance.now() - sentAt > REBROADCAST_MS) {
        await transfers.sendTransaction(tx.transaction, signal);
        sentAt = performance.now();
      }
    }
  }

  return {
    follow,
    /** What earlier attempts sent decides whether this one may sign at all (see above). */
    async resume(journal: ExecutionJournal, signal: AbortSignal): Promise<SentOutcome | undefined> {
      const sent = await journal.transactions();
      if (sent.length === 0) return undefined;
      const height = await transfers.getBlockHeight(signal);
      // History searched: an attempt after a crash may come long after the send.
      const statuses = await transfers.getSignatureStatuses(
        sent.map((t) => t.signature),
        signal,
        { searchHistory: true },
      );
      const landed = sent.findIndex((_, i) => statuses[i] !== undefined && statuses[i]?.err === null);
      if (landed >= 0) {
        return {
          kind: "landed",
          tx: sent[landed] as SentTransaction,
          slot: statuses[landed]?.slot as bigint,
        };
      }
      const live = sent.filter((t, i) => statuses[i] === undefined && height <= t.lastValidBlockHeight);
      const newest = live.at(-1);
      if (newest === undefined) return undefined;
      await transfers.sendTransaction(newest.transaction, signal);
      return follow(newest, signal);
    },
    /**
     * Keeps `kept` in the journal, sends it (preflight on) and follows it. "lease_lost": this
     * attempt no longer holds the slot, and nothing was sent. A preflight refusal is `failed`.
     */
    async send(
      journal: ExecutionJournal,
      kept: Omit<SentTransaction, "generation" | "recordedAt">,
      signal: AbortSignal,
    ): Promise<SentOutcome | "lease_lost"> {
      if (!(await journal.record(kept))) return "lease_lost";
      const tx: SentTransaction = { ...kept, generation: 0, recordedAt: new Date() };
      await options.hooks?.beforeSend?.(tx, () => transfers.getBlockHeight(signal));
      try {
        // The send's own preflight is a simulation too: a transaction it refuses was not sent and
        // cannot land, so the run fails with the chain's reason (and a later attempt that finds it
        // in the journal sees it unknown, and signs anew once its blockhash has expired).
        await transfers.sendTransaction(kept.transaction, signal, { preflight: true });
      } catch (error) {
        if (error instanceof PreflightFailure) return { kind: "failed", tx, err: error.err };
        throw error;
      }
      options.hooks?.afterSend?.();
      return follow(tx, signal, true);
    },
  };
}

export type SentTransactions = ReturnType<typeof createSentTransactions>;

/**
 * The executor of runs that sign and send transactions (transfers and swaps alike), around `run`,
 * one attempt. Both retry the same two interruptions, because the slot's journal keeps whatever
 * an attempt sent and the next attempt resumes from it: an attempt cut short by its signal (its
 * lease lost, the process stopping), and a chain that cannot be reached. Any other error goes on
 * to the scheduler.
 */
export function signingExecutor(run: (execution: Execution) => Promise<ExecutionResult>): Executor {
  return {
    async execute(execution) {
      try {
        return await run(execution);
      } catch (error) {
        if (execution.signal.aborted) return { ok: false, error: "the run was abandoned before it finished" };
        if (error instanceof UnavailableError) {
          return { ok: false, error: `the chain cannot be reached: ${error.message}` };
        }
        throw error;
      }
    },
  };
}

/**
 * The least time between two status polls of one executor. Under load a transaction learns its
 * confirmation within this of it (a slot's wait would be 400 ms); alone, it is polled a slot apart.
 */
const STATUS_GAP_MS = 100;

/** Sent again while it may still land, as wallets do: a validator may have dropped it. */
const REBROADCAST_MS = 2000;

/** The reason of an attempt whose transaction expired unlanded. */
export const EXPIRED =
  "the transaction expired before it landed (its blockhash is too old); the next attempt signs a new one";

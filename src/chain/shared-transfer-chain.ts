import { untilAborted } from "./cached-chain.ts";
import { MAX_STATUSES_PER_CALL, type SentStatus, type TransferChain } from "./chain.ts";

/**
 * The transfer chain shared by every run in flight, so a keeper's chain traffic grows with time,
 * not with the number of runs:
 * - one getLatestBlockhash serves every run signed within `blockhashTtlMs` (a blockhash a second
 *   old still has about 150 blocks to land);
 * - one getBlockHeight serves every caller within `heightTtlMs` (blocks come on a clock: asking
 *   faster than a slot learns nothing). A shared height was read before the statuses asked after
 *   it, which is the order the executor's expiry rule needs;
 * - the getSignatureStatuses asked for in the same turn of the event loop go out as one call (up
 *   to 256 signatures each), and each caller gets its own answers back, in its order.
 * Failures reach every caller that shared the call; nothing failed is kept.
 */
export function createSharedTransferChain(
  chain: TransferChain,
  options: { blockhashTtlMs?: number; heightTtlMs?: number } = {},
): TransferChain {
  const blockhashTtlMs = options.blockhashTtlMs ?? 1_000;
  const heightTtlMs = options.heightTtlMs ?? 200;
  const blockhash = sharedFor(blockhashTtlMs, () => chain.getLatestBlockhash());
  const height = sharedFor(heightTtlMs, () => chain.getBlockHeight());

  interface Asked {
    readonly signatures: readonly string[];
    resolve(statuses: readonly (SentStatus | undefined)[]): void;
    reject(error: unknown): void;
  }
  /** The callers of this turn, apart by whether they asked for history to be searched. */
  const queues: [Asked[], Asked[]] = [[], []];
  let flushing = false;
  const flush = () => {
    flushing = false;
    flushQueue(false);
    flushQueue(true);
  };
  const flushQueue = (searchHistory: boolean) => {
    const index = searchHistory ? 1 : 0;
    const asked = queues[index];
    queues[index] = [];
    // Calls of at most MAX_STATUSES_PER_CALL signatures, each caller's whole within one call.
    let batch: Asked[] = [];
    let size = 0;
    const send = (group: Asked[]) => {
      const all = group.flatMap((a) => a.signatures);
      chain.getSignatureStatuses(all, undefined, { searchHistory }).then(
        (statuses) => {
          let at = 0;
          for (const a of group) {
            a.resolve(statuses.slice(at, at + a.signatures.length));
            at += a.signatures.length;
          }
        },
        (error: unknown) => {
          for (const a of group) a.reject(error);
        },
      );
    };
    for (const a of asked) {
      if (size + a.signatures.length > MAX_STATUSES_PER_CALL && batch.length > 0) {
        send(batch);
        batch = [];
        size = 0;
      }
      batch.push(a);
      size += a.signatures.length;
    }
    if (batch.length > 0) send(batch);
  };

  return {
    getTokenAccount: (address, signal) => chain.getTokenAccount(address, signal),
    getAccounts: (addresses, signal) => chain.getAccounts(addresses, signal),
    getTokenAccounts: (addresses, signal) => chain.getTokenAccounts(addresses, signal),
    getLatestBlockhash: (signal) => untilAborted(blockhash(), signal),
    getBlockHeight: (signal) => untilAborted(height(), signal),
    getSignatureStatuses(signatures, signal, options) {
      if (signatures.length === 0) return Promise.resolve([]);
      // A caller asking for more than one call carries is served alone, in its own calls.
      if (signatures.length > MAX_STATUSES_PER_CALL) {
        return chain.getSignatureStatuses(signatures, signal, options);
      }
      const answer = new Promise<readonly (SentStatus | undefined)[]>((resolve, reject) => {
        queues[options?.searchHistory === true ? 1 : 0].push({ signatures, resolve, reject });
      });
      if (!flushing) {
        flushing = true;
        setImmediate(flush);
      }
      return untilAborted(answer, signal);
    },
    simulateTransaction: (transaction, signal, options) =>
      chain.simulateTransaction(transaction, signal, options),
    sendTransaction: (transaction, signal, options) => chain.sendTransaction(transaction, signal, options),
  };
}

/** `load`'s answer, shared by every caller within `ttlMs` of its start; a failure is not kept. */
function sharedFor<T>(ttlMs: number, load: () => Promise<T>): () => Promise<T> {
  let current: { at: number; value: Promise<T> } | undefined;
  return () => {
    const now = performance.now();
    if (current === undefined || now - current.at > ttlMs) {
      const value = load();
      const entry = { at: now, value };
      current = entry;
      value.catch(() => {
        if (current === entry) current = undefined;
      });
    }
    return current.value;
  };
}

import { LRUCache } from "lru-cache";
import type { Chain, ChainTransaction, MintAccount, OnChainMetadata } from "./chain.ts";

export interface CachedChainOptions {
  readonly chain: Chain;
  /** Landed transactions kept, by signature (least recently used go first); 0 keeps none. */
  readonly maxTransactions: number;
  /** Mints and metadata kept, by address. */
  readonly maxAccounts: number;
  /** How long a mint or its metadata is trusted before it is read again. */
  readonly accountTtlMs: number;
}

/**
 * A chain whose reads that do not change are answered from memory: a landed transaction (kept
 * until evicted: its meta never changes once confirmed), and a mint's decimals and metadata (kept
 * for `accountTtlMs`, as metadata can be updated). Concurrent misses for one key share one
 * request, so a burst of callers asking for the same page costs the cluster one read per
 * transaction. Shared reads are not tied to the first caller's deadline (another caller may still
 * want the answer); each caller stops waiting when its own signal aborts, and the read itself is
 * bounded by the transport's timeout. Signature lists are never cached: new transactions land.
 */
export function createCachedChain(options: CachedChainOptions): Chain {
  const { chain } = options;
  const transactions =
    options.maxTransactions === 0
      ? undefined
      : new LRUCache<string, ChainTransaction>({
          max: options.maxTransactions,
          // undefined (not landed, or unknown) is not cached: the transaction may still land.
          fetchMethod: (signature) => chain.getTransaction(signature),
        });
  // Boxed so that "no mint here" is cached too (lru-cache does not keep undefined).
  const mints = new LRUCache<string, { value: MintAccount | undefined }>({
    max: options.maxAccounts,
    ttl: options.accountTtlMs,
    fetchMethod: async (mint) => ({ value: await chain.getMint(mint) }),
  });
  const metadata = new LRUCache<string, { value: OnChainMetadata | undefined }>({
    max: options.maxAccounts,
    ttl: options.accountTtlMs,
    fetchMethod: async (mint) => ({ value: await chain.getMetaplexMetadata(mint) }),
  });
  return {
    getMint: async (mint, signal) => (await untilAborted(mints.fetch(mint), signal))?.value,
    getMetaplexMetadata: async (mint, signal) => (await untilAborted(metadata.fetch(mint), signal))?.value,
    getTransaction: (signature, signal) =>
      transactions === undefined
        ? chain.getTransaction(signature, signal)
        : untilAborted(transactions.fetch(signature), signal),
    getSignaturesForAddress: (address, query, signal) =>
      chain.getSignaturesForAddress(address, query, signal),
    // A balance changes with every transaction: never cached.
    getBalance: (address, signal) => chain.getBalance(address, signal),
    isHealthy: (signal) => chain.isHealthy(signal),
  };
}

/** `promise`, or the signal's reason as soon as it aborts. */
export function untilAborted<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (signal === undefined) return promise;
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const abort = () => reject(signal.reason);
    signal.addEventListener("abort", abort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener("abort", abort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener("abort", abort);
        reject(error);
      },
    );
  });
}

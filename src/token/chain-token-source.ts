import type { Chain, ChainTransaction, SignatureInfo } from "../chain/chain.ts";
import type {
  TokenList,
  TokenMetadata,
  TokenSource,
  TokenTransaction,
  TransactionPage,
  TransactionPageQuery,
} from "./token-source.ts";
import { tokenTransactionFromChain } from "./token-transaction-from-chain.ts";

export interface ChainTokenSourceOptions {
  readonly chain: Chain;
  /** The token list: logos and tags, and names for mints without on-chain metadata. */
  readonly tokenList: TokenList;
  /** Transactions of one page read from the chain at once. */
  readonly concurrency: number;
}

const UNKNOWN_MINT: TransactionPage = Object.freeze({ kind: "unknown-mint" });
const UNKNOWN_CURSOR: TransactionPage = Object.freeze({ kind: "unknown-cursor" });

/**
 * Token data from the chain: a mint's decimals and on-chain name and symbol (Token-2022's metadata
 * extension, else Metaplex Token Metadata), and its transactions (the signatures that name the
 * mint, newest first, each read and summarised from its token balance changes). Logos and tags
 * come from the token list, which the chain does not hold.
 */
export function createChainTokenSource(options: ChainTokenSourceOptions): TokenSource {
  const { chain, tokenList, concurrency } = options;
  // A landed transaction never changes, so what it did to a mint is worked out once per (cached)
  // transaction object, and the same entry object serves every later page (the RPC layer then
  // reuses its message for it too).
  const summaries = new WeakMap<ChainTransaction, Map<string, TokenTransaction>>();
  const summarize = (
    entry: SignatureInfo,
    tx: ChainTransaction | undefined,
    mint: string,
  ): TokenTransaction => {
    if (tx === undefined) return unknownTransaction(entry);
    let byMint = summaries.get(tx);
    if (byMint === undefined) {
      byMint = new Map();
      summaries.set(tx, byMint);
    }
    let summary = byMint.get(mint);
    if (summary === undefined) {
      summary = Object.freeze(tokenTransactionFromChain(tx, mint));
      byMint.set(mint, summary);
    }
    return summary;
  };

  /** The cursor must be a landed transaction that names this mint. */
  const cursorBelongs = async (mint: string, before: string, signal?: AbortSignal): Promise<boolean> => {
    const tx = await chain.getTransaction(before, signal);
    return tx?.accountKeys.includes(mint) === true;
  };

  return {
    async getMetadata(mint, signal) {
      const [account, listings] = await Promise.all([
        chain.getMint(mint, signal),
        tokenList.listingsOf([mint]),
      ]);
      if (account === undefined) return undefined;
      const onChain = account.metadata ?? (await chain.getMetaplexMetadata(mint, signal));
      const token = listings.get(mint);
      return {
        mint,
        // The token list fills in for mints without on-chain metadata.
        symbol: onChain?.symbol ?? token?.symbol ?? "",
        name: onChain?.name ?? token?.name ?? "",
        decimals: account.decimals,
        logoURI: token?.logoURI ?? "",
        tags: token?.tags ?? [],
      } satisfies TokenMetadata;
    },

    async listTransactions(mint: string, query: TransactionPageQuery, signal?: AbortSignal) {
      const { limit, before } = query;
      const [account, cursorOk] = await Promise.all([
        chain.getMint(mint, signal),
        before === undefined ? true : cursorBelongs(mint, before, signal),
      ]);
      if (account === undefined) return UNKNOWN_MINT;
      if (!cursorOk) return UNKNOWN_CURSOR;
      const entries = await chain.getSignaturesForAddress(
        mint,
        before === undefined ? { limit } : { limit, before },
        signal,
      );
      const transactions = await mapBounded(entries, concurrency, async (entry) =>
        summarize(entry, await chain.getTransaction(entry.signature, signal), mint),
      );
      return { kind: "page", transactions } satisfies TransactionPage;
    },
  };
}

/**
 * A listed signature whose transaction the cluster cannot return (pruned from its history, or
 * listed at a lower commitment than it serves) keeps its place in the page as `other`, so that the
 * page still follows the chain's history one for one.
 */
function unknownTransaction(entry: SignatureInfo): TokenTransaction {
  return {
    signature: entry.signature,
    blockTime: entry.blockTime ?? 0,
    amount: 0,
    sender: "",
    recipient: "",
    type: "other",
  };
}

/** `map` over `items` with at most `limit` calls in flight, results in the items' order. */
async function mapBounded<T, R>(
  items: readonly T[],
  limit: number,
  map: (item: T) => Promise<R>,
): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await map(items[index] as T);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

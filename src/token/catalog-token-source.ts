/**
 * The embedded token catalog (`catalog.json`, written by `scripts/generate-catalog.ts`) as a
 * TokenSource: the default source, so the service answers without any network at runtime.
 *
 * Everything a call could need is built once at construction and frozen, and calls only look up
 * and slice: these are the service's hottest paths and the data never changes.
 */
import { readFileSync } from "node:fs";
import { isAddress, isBase58OfSize } from "../domain/base58.ts";
import type {
  TokenMetadata,
  TokenPrice,
  TokenSource,
  TokenTransaction,
  TransactionPage,
  TransactionPageQuery,
} from "./token-source.ts";

export interface CatalogToken extends TokenMetadata {
  readonly price: number;
  readonly change24h: number;
  /** Newest first: blockTime descending, ties by signature ascending (plain `<`, not localeCompare). */
  readonly transactions: readonly TokenTransaction[];
}

export interface Catalog {
  readonly generatedBy: string;
  readonly seed: number;
  readonly asOf: string;
  readonly tokens: readonly CatalogToken[];
}

const UNKNOWN_MINT: TransactionPage = Object.freeze({ kind: "unknown-mint" });
const UNKNOWN_CURSOR: TransactionPage = Object.freeze({ kind: "unknown-cursor" });

/** Reads and validates the embedded catalog; throws if the file is not what the service relies on. */
export function loadCatalog(): Catalog {
  const text = readFileSync(new URL("./catalog.json", import.meta.url), "utf8");
  return validateCatalog(JSON.parse(text));
}

export function createCatalogTokenSource(options: { catalog?: Catalog } = {}): TokenSource {
  // A given catalog is checked too: paging and the lookups below rely on the same invariants.
  const catalog = options.catalog === undefined ? loadCatalog() : validateCatalog(options.catalog);

  // Fresh objects with exactly the interface's fields, so no caller ever sees the raw catalog.
  const prices: readonly TokenPrice[] = Object.freeze(
    catalog.tokens.map(({ mint, symbol, price, change24h }) =>
      Object.freeze({ mint, symbol, price, change24h }),
    ),
  );
  const metadata = new Map<string, TokenMetadata>();
  const histories = new Map<string, { list: readonly TokenTransaction[]; index: Map<string, number> }>();
  const symbols = new Map<string, string>();
  for (const token of catalog.tokens) {
    const { mint, symbol, name, decimals, logoURI } = token;
    metadata.set(
      mint,
      Object.freeze({ mint, symbol, name, decimals, logoURI, tags: Object.freeze([...token.tags]) }),
    );
    const list = Object.freeze(
      token.transactions.map(({ signature, blockTime, amount, sender, recipient, type }) =>
        Object.freeze({ signature, blockTime, amount, sender, recipient, type }),
      ),
    );
    histories.set(mint, { list, index: new Map(list.map((tx, i) => [tx.signature, i])) });
    symbols.set(symbol.toLowerCase(), symbol);
  }

  return {
    listPrices: () => Promise.resolve(prices),
    getMetadata: (mint) => Promise.resolve(metadata.get(mint)),
    listTransactions(mint: string, query: TransactionPageQuery): Promise<TransactionPage> {
      const history = histories.get(mint);
      if (history === undefined) return Promise.resolve(UNKNOWN_MINT);
      let start = 0;
      if (query.before !== undefined) {
        // Only this token's signatures count: a cursor from another token's history is unknown here.
        const at = history.index.get(query.before);
        if (at === undefined) return Promise.resolve(UNKNOWN_CURSOR);
        start = at + 1;
      }
      const transactions = Object.freeze(history.list.slice(start, start + query.limit));
      return Promise.resolve(Object.freeze({ kind: "page", transactions }));
    },
    canonicalSymbol: (symbol) => Promise.resolve(symbols.get(symbol.toLowerCase())),
  };
}

/** Checks the shape and the invariants once, so that no call has to. */
function validateCatalog(data: unknown): Catalog {
  const fail = (message: string): never => {
    throw new Error(`Invalid token catalog: ${message}`);
  };
  const record = (value: unknown, what: string): Record<string, unknown> =>
    typeof value === "object" && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : fail(`${what} is not an object`);
  const text = (value: unknown, what: string): string =>
    typeof value === "string" && value.length > 0 ? value : fail(`${what} is not a non-empty string`);
  const finite = (value: unknown, what: string): number =>
    typeof value === "number" && Number.isFinite(value) ? value : fail(`${what} is not a finite number`);

  const root = record(data, "the catalog");
  if (!Array.isArray(root.tokens) || root.tokens.length === 0) fail("tokens is not a non-empty array");
  const mints = new Set<string>();
  const symbols = new Set<string>();
  for (const [i, value] of (root.tokens as unknown[]).entries()) {
    const token = record(value, `tokens[${i}]`);
    const mint = text(token.mint, `tokens[${i}].mint`);
    const where = `token ${mint}`;
    if (!isAddress(mint)) fail(`${where}: mint is not base58 of 32 bytes`);
    if (mints.has(mint)) fail(`${where}: duplicate mint`);
    mints.add(mint);
    const symbol = text(token.symbol, `${where}.symbol`).toLowerCase();
    if (symbols.has(symbol)) fail(`${where}: symbol ${token.symbol} is not unique (case-insensitively)`);
    symbols.add(symbol);
    text(token.name, `${where}.name`);
    text(token.logoURI, `${where}.logoURI`);
    if (!Number.isInteger(token.decimals) || (token.decimals as number) < 0) fail(`${where}: bad decimals`);
    if (!Array.isArray(token.tags) || !token.tags.every((tag) => typeof tag === "string")) {
      fail(`${where}: tags is not an array of strings`);
    }
    finite(token.price, `${where}.price`);
    finite(token.change24h, `${where}.change24h`);
    if (!Array.isArray(token.transactions)) fail(`${where}: transactions is not an array`);
    const seen = new Set<string>();
    let previous: { signature: string; blockTime: number } | undefined;
    for (const [j, entry] of (token.transactions as unknown[]).entries()) {
      const tx = record(entry, `${where}.transactions[${j}]`);
      const signature = text(tx.signature, `${where}.transactions[${j}].signature`);
      const at = `${where}, transaction ${signature}`;
      if (!isBase58OfSize(signature, 64)) fail(`${at}: signature is not base58 of 64 bytes`);
      if (seen.has(signature)) fail(`${at}: duplicate signature`);
      seen.add(signature);
      if (!Number.isInteger(tx.blockTime)) fail(`${at}: blockTime is not an integer`);
      const blockTime = tx.blockTime as number;
      if (!(finite(tx.amount, `${at}.amount`) > 0)) fail(`${at}: amount is not positive`);
      if (!isAddress(text(tx.sender, `${at}.sender`))) fail(`${at}: sender is not an address`);
      if (!isAddress(text(tx.recipient, `${at}.recipient`))) fail(`${at}: recipient is not an address`);
      text(tx.type, `${at}.type`);
      if (
        previous !== undefined &&
        !(
          previous.blockTime > blockTime ||
          (previous.blockTime === blockTime && previous.signature < signature)
        )
      ) {
        fail(`${at}: out of order (blockTime descending, then signature ascending)`);
      }
      previous = { signature, blockTime };
    }
  }
  return data as Catalog;
}

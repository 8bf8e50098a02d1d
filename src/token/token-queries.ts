import { isAddress } from "@solana/addresses";
import { ADDRESS_RULE, isTransactionSignature, SIGNATURE_RULE } from "../domain/address-rule.ts";
import { type FieldViolation, InvalidArgumentError, NotFoundError, quote } from "../domain/errors.ts";
import { pageLimit } from "../domain/page-limit.ts";
import type {
  PriceSource,
  TokenList,
  TokenMetadata,
  TokenPrice,
  TokenSource,
  TokenTransaction,
} from "./token-source.ts";

/** Empty strings mean "not given", as proto3 strings have no presence. */
export interface PriceQuery {
  readonly mint: string;
  readonly symbol: string;
  readonly mints: readonly string[];
}

/** Mints one GetTokenPrices call may name. */
export const MAX_PRICE_MINTS = 100;
/** Longest symbol looked up. */
const MAX_SYMBOL_LENGTH = 32;

export interface TransactionsQuery {
  readonly mint: string;
  readonly limit: number;
  readonly before: string;
}

/** What WatchTokenPrices asks to watch. */
export interface WatchQuery {
  readonly mints: readonly string[];
  readonly symbols: readonly string[];
}

/** Symbols one WatchTokenPrices call may name. */
export const MAX_WATCH_SYMBOLS = 10;

/** `signal` aborts when the caller goes away or its deadline passes; reads stop there. */
export interface TokenQueries {
  getPrices(query: PriceQuery): Promise<readonly TokenPrice[]>;
  /**
   * The mints a price watch covers: those asked for, then those of each symbol (through the
   * token list, verified tokens first), at most MAX_PRICE_MINTS in all, each once.
   */
  watchedMints(query: WatchQuery): Promise<readonly string[]>;
  getMetadata(mint: string, signal?: AbortSignal): Promise<TokenMetadata>;
  getTransactions(query: TransactionsQuery, signal?: AbortSignal): Promise<readonly TokenTransaction[]>;
}

/**
 * The token rules of the contract, independent of any transport and of where token data comes
 * from: input validation, filters, paging. Sources only look data up.
 */
export function createTokenQueries(options: {
  prices: PriceSource;
  tokenList: TokenList;
  source: TokenSource;
}): TokenQueries {
  const { prices: priceSource, tokenList, source } = options;
  return {
    async getPrices({ mint, symbol, mints }) {
      const violations: FieldViolation[] = [];
      if (mint !== "" && !isAddress(mint)) violations.push({ field: "mint", description: ADDRESS_RULE });
      checkMints(mints, violations);
      checkSymbol(symbol, "symbol", violations);
      if (violations.length > 0) throw new InvalidArgumentError(violations);
      // Each mint once; most calls name one mint or none, which need no de-duplication.
      const asked =
        mint === "" && mints.length <= 1 ? mints : [...new Set(mint === "" ? mints : [mint, ...mints])];
      if (asked.length === 0) {
        if (symbol === "") return priceSource.pricesOf(priceSource.watchlist);
        const withSymbol = await tokenList.mintsWithSymbol(symbol);
        // An unknown symbol is as unknown as an unknown mint, not an empty answer a typo hides in.
        if (withSymbol.length === 0) {
          throw new NotFoundError(`no token has the symbol ${quote(symbol)}`);
        }
        return priceSource.pricesOf(withSymbol.slice(0, MAX_PRICE_MINTS));
      }
      const prices = await priceSource.pricesOf(asked);
      if (symbol === "") return prices;
      const wanted = symbol.toLowerCase();
      return prices.filter((p) => p.symbol.toLowerCase() === wanted);
    },

    async watchedMints({ mints, symbols }) {
      const violations: FieldViolation[] = [];
      checkMints(mints, violations);
      if (symbols.length > MAX_WATCH_SYMBOLS) {
        violations.push({ field: "symbols", description: `must hold at most ${MAX_WATCH_SYMBOLS} symbols` });
      } else {
        symbols.forEach((symbol, i) => {
          if (symbol === "") violations.push({ field: `symbols[${i}]`, description: "must not be empty" });
          else checkSymbol(symbol, `symbols[${i}]`, violations);
        });
      }
      if (mints.length === 0 && symbols.length === 0) {
        violations.push({ field: "mints", description: "or symbols must name at least one token to watch" });
      }
      if (violations.length > 0) throw new InvalidArgumentError(violations);
      const watched = new Set(mints);
      for (const symbol of symbols) {
        for (const mint of await tokenList.mintsWithSymbol(symbol)) {
          if (watched.size >= MAX_PRICE_MINTS) break;
          watched.add(mint);
        }
      }
      return [...watched];
    },

    async getMetadata(mint, signal) {
      requireMint(mint, []);
      const metadata = await source.getMetadata(mint, signal);
      if (metadata === undefined) throw new NotFoundError(`token ${mint} not found`);
      return metadata;
    },

    async getTransactions({ mint, limit, before }, signal) {
      const violations: FieldViolation[] = [];
      requireMint(mint, violations, false);
      const applied = pageLimit(limit, violations);
      if (before !== "" && !isTransactionSignature(before))
        violations.push({ field: "before", description: SIGNATURE_RULE });
      if (violations.length > 0) throw new InvalidArgumentError(violations);
      const page = await source.listTransactions(
        mint,
        before === "" ? { limit: applied } : { limit: applied, before },
        signal,
      );
      switch (page.kind) {
        case "page":
          return page.transactions;
        case "unknown-mint":
          throw new NotFoundError(`token ${mint} not found`);
        case "unknown-cursor":
          throw InvalidArgumentError.field(
            "before",
            "must be the signature of one of this token's transactions",
          );
      }
    },
  };
}

function checkMints(mints: readonly string[], violations: FieldViolation[]): void {
  if (mints.length > MAX_PRICE_MINTS) {
    violations.push({ field: "mints", description: `must hold at most ${MAX_PRICE_MINTS} mints` });
    return;
  }
  mints.forEach((m, i) => {
    if (!isAddress(m)) violations.push({ field: `mints[${i}]`, description: ADDRESS_RULE });
  });
}

function checkSymbol(symbol: string, field: string, violations: FieldViolation[]): void {
  if (symbol.length > MAX_SYMBOL_LENGTH || /[,\p{Cc}]/u.test(symbol)) {
    violations.push({
      field,
      description: `must be at most ${MAX_SYMBOL_LENGTH} characters and hold no comma or control character`,
    });
  }
}

/** Validates a required mint; throws at once unless `throwNow` is false, which gathers it with other violations. */
function requireMint(mint: string, violations: FieldViolation[], throwNow = true): void {
  if (mint === "") violations.push({ field: "mint", description: "is required" });
  else if (!isAddress(mint)) violations.push({ field: "mint", description: ADDRESS_RULE });
  if (throwNow && violations.length > 0) throw new InvalidArgumentError(violations);
}

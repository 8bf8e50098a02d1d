import { isAddress } from "@solana/addresses";
import { ADDRESS_RULE, isTransactionSignature, SIGNATURE_RULE } from "../domain/address-rule.ts";
import { type FieldViolation, InvalidArgumentError, NotFoundError } from "../domain/errors.ts";
import { pageLimit } from "../domain/page-limit.ts";
import type {
  PriceSource,
  TokenMetadata,
  TokenPrice,
  TokenSource,
  TokenTransaction,
} from "./token-source.ts";

/** Empty strings mean "not given", as proto3 strings have no presence. */
export interface PriceQuery {
  readonly mint: string;
  readonly symbol: string;
}

export interface TransactionsQuery {
  readonly mint: string;
  readonly limit: number;
  readonly before: string;
}

/** `signal` aborts when the caller goes away or its deadline passes; reads stop there. */
export interface TokenQueries {
  getPrices(query: PriceQuery): Promise<readonly TokenPrice[]>;
  getMetadata(mint: string, signal?: AbortSignal): Promise<TokenMetadata>;
  getTransactions(query: TransactionsQuery, signal?: AbortSignal): Promise<readonly TokenTransaction[]>;
}

/**
 * The token rules of the contract, independent of any transport and of where token data comes
 * from: input validation, filters, paging. Sources only look data up.
 */
export function createTokenQueries(options: { prices: PriceSource; source: TokenSource }): TokenQueries {
  const { prices: priceSource, source } = options;
  return {
    async getPrices({ mint, symbol }) {
      if (mint !== "" && !isAddress(mint)) throw InvalidArgumentError.field("mint", ADDRESS_RULE);
      const prices = await priceSource.listPrices();
      if (mint === "" && symbol === "") return prices;
      const wanted = symbol.toLowerCase();
      return prices.filter(
        (p) => (mint === "" || p.mint === mint) && (wanted === "" || p.symbol.toLowerCase() === wanted),
      );
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

/** Validates a required mint; throws at once unless `throwNow` is false, which gathers it with other violations. */
function requireMint(mint: string, violations: FieldViolation[], throwNow = true): void {
  if (mint === "") violations.push({ field: "mint", description: "is required" });
  else if (!isAddress(mint)) violations.push({ field: "mint", description: ADDRESS_RULE });
  if (throwNow && violations.length > 0) throw new InvalidArgumentError(violations);
}

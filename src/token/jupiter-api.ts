import { isAddress } from "@solana/addresses";
import type { JsonUpstream } from "../upstream/json-upstream.ts";
import { UpstreamError } from "../upstream/json-upstream.ts";

/** One token's price as Jupiter's Price API v3 gives it. */
export interface JupiterPrice {
  readonly usdPrice: number;
  /** Percent; 0 when Jupiter gives none. */
  readonly priceChange24h: number;
  /** The slot Jupiter priced the token at; 0 when it gives none. */
  readonly blockId: number;
}

/** One token as Jupiter's Tokens API v2 describes it (the fields the service uses). */
export interface JupiterToken {
  readonly id: string;
  readonly name: string;
  readonly symbol: string;
  readonly icon: string;
  readonly tags: readonly string[];
  readonly isVerified: boolean;
}

/** Mints one Price API request may name (Jupiter's limit). */
export const PRICE_IDS_PER_REQUEST = 50;
/** Mints one token search may name (Jupiter's limit). */
export const SEARCH_MINTS_PER_REQUEST = 100;

export interface JupiterApi {
  /** Prices of up to 50 mints; a mint without a reliable price is absent from the map. */
  prices(mints: readonly string[]): Promise<ReadonlyMap<string, JupiterPrice>>;
  /** Tokens matching a symbol or name, or the tokens of up to 100 comma-separated mints. */
  search(query: string): Promise<readonly JupiterToken[]>;
  /** Every verified token. */
  verified(): Promise<readonly JupiterToken[]>;
}

/**
 * Jupiter's Price API v3 (`/price/v3?ids=`) and Tokens API v2 (`/tokens/v2/search?query=`,
 * `/tokens/v2/tag?query=verified`) over a JSON upstream. Answers are checked field by field:
 * an entry that is not what Jupiter documents is left out (a price that is not a positive number
 * is no reliable price), and an answer that is not the documented shape at all fails as
 * `bad_response`, so nothing unchecked reaches a caller.
 */
export function createJupiterApi(options: {
  readonly upstream: JsonUpstream;
  /** Largest price or search answer read. */
  readonly maxResponseBytes: number;
  /** Largest verified token list read. */
  readonly maxTokenListBytes: number;
}): JupiterApi {
  const { upstream, maxResponseBytes, maxTokenListBytes } = options;
  return {
    async prices(mints) {
      const answer = await upstream.getJson("price", `/price/v3?ids=${mints.join(",")}`, maxResponseBytes);
      if (typeof answer !== "object" || answer === null || Array.isArray(answer)) {
        throw new UpstreamError(
          "bad_response",
          "Jupiter's Price API answered something that is not a price map",
        );
      }
      const prices = new Map<string, JupiterPrice>();
      for (const mint of mints) {
        const entry = Object.hasOwn(answer, mint) ? (answer as Record<string, unknown>)[mint] : undefined;
        const price = priceOf(entry);
        if (price !== undefined) prices.set(mint, price);
      }
      return prices;
    },
    async search(query) {
      return tokensOf(
        await upstream.getJson(
          "tokens_search",
          `/tokens/v2/search?query=${encodeURIComponent(query)}`,
          maxResponseBytes,
        ),
      );
    },
    async verified() {
      return tokensOf(
        await upstream.getJson("tokens_verified", "/tokens/v2/tag?query=verified", maxTokenListBytes),
      );
    },
  };
}

function priceOf(entry: unknown): JupiterPrice | undefined {
  if (typeof entry !== "object" || entry === null) return undefined;
  const { usdPrice, priceChange24h, blockId } = entry as Record<string, unknown>;
  if (typeof usdPrice !== "number" || !Number.isFinite(usdPrice) || usdPrice <= 0) return undefined;
  return {
    usdPrice,
    priceChange24h:
      typeof priceChange24h === "number" && Number.isFinite(priceChange24h) ? priceChange24h : 0,
    blockId: Number.isSafeInteger(blockId) && (blockId as number) >= 0 ? (blockId as number) : 0,
  };
}

function tokensOf(answer: unknown): readonly JupiterToken[] {
  if (!Array.isArray(answer)) {
    throw new UpstreamError(
      "bad_response",
      "Jupiter's Tokens API answered something that is not a token list",
    );
  }
  const tokens: JupiterToken[] = [];
  for (const item of answer) {
    if (typeof item !== "object" || item === null) continue;
    const { id, name, symbol, icon, tags, isVerified } = item as Record<string, unknown>;
    if (typeof id !== "string" || !isAddress(id) || typeof symbol !== "string") continue;
    tokens.push({
      id,
      symbol,
      name: typeof name === "string" ? name : "",
      icon: typeof icon === "string" ? icon : "",
      tags: Array.isArray(tags) ? tags.filter((tag): tag is string => typeof tag === "string") : [],
      isVerified: isVerified === true,
    });
  }
  return tokens;
}

/**
 * Prices from Pyth, read from a Hermes instance: `GET /v2/updates/price/latest?ids[]=…&parsed=true`,
 * whose `parsed` entries hold each feed's latest aggregate price as Pyth documents it
 * (docs.pyth.network, api-reference/pyth-core/hermes/latest_price_updates): `id` (64 hex digits),
 * `price.price` and `price.conf` (integers, as strings), `price.expo` and `price.publish_time`
 * (seconds). The price is `price × 10^expo` US dollars.
 *
 * The operator names the feed of each token (PYTH_PRICE_FEEDS); none is built in. A mint without a
 * feed, a feed Hermes leaves out, and an entry that is not what Pyth documents are unpriced, and so
 * is a price whose confidence interval is wider than MAX_CONFIDENCE_RATIO of it (Pyth's publishers
 * disagree). A price's `asOf` is the feed's own `publish_time`, not when it was read: a feed Pyth
 * stopped publishing is as old as its last price, however fresh the answer.
 *
 * Not a cache: every call is one request per FEEDS_PER_REQUEST feeds (the trigger watch calls it
 * once an interval). The upstream bounds the call (timeout, answer size, concurrency, breaker);
 * any failure of it is UnavailableError.
 */
import { UnavailableError } from "../domain/errors.ts";
import { type JsonUpstream, UpstreamError } from "../upstream/json-upstream.ts";
import type { PriceSource, TokenPrice } from "./token-source.ts";

export interface PythFeed {
  readonly mint: string;
  readonly symbol: string;
  /** 64 lowercase hex digits, without 0x. */
  readonly feedId: string;
}

export interface PythHermesPriceSourceOptions {
  readonly upstream: JsonUpstream;
  readonly feeds: readonly PythFeed[];
  /** Largest answer read, in bytes. */
  readonly maxResponseBytes: number;
  readonly now?: () => Date;
}

/** Feed ids one request names. */
export const FEEDS_PER_REQUEST = 25;
/** A price whose confidence interval is wider than this share of it is no price. */
export const MAX_CONFIDENCE_RATIO = 0.02;
/** Exponents accepted (Pyth's feeds use small negative ones: -8, -5, -10). */
const MIN_EXPO = -20;
const MAX_EXPO = 4;
/** A publish_time past this (the year 5138) is not a time. */
const MAX_SECONDS = 1e11;
/** An int64 in decimal, as Hermes writes `price` and `conf`. */
const INT64 = /^-?\d{1,19}$/;

interface PythPrice {
  readonly price: number;
  readonly publishTime: Date;
}

export function createPythHermesPriceSource(options: PythHermesPriceSourceOptions): PriceSource {
  const { upstream, maxResponseBytes } = options;
  const now = options.now ?? (() => new Date());
  const feedOf = new Map(options.feeds.map((feed) => [feed.mint, feed]));

  async function latest(feedIds: readonly string[]): Promise<ReadonlyMap<string, PythPrice>> {
    const ids = feedIds.map((id) => `ids%5B%5D=${id}`).join("&");
    const path = `/v2/updates/price/latest?${ids}&parsed=true&encoding=base64&ignore_invalid_price_ids=true`;
    let answer: unknown;
    try {
      answer = await upstream.getJson("price_latest", path, maxResponseBytes);
    } catch (error) {
      if (error instanceof UpstreamError)
        throw new UnavailableError(`Pyth prices are unavailable: ${error.message}`);
      throw error;
    }
    const parsed = (answer as { parsed?: unknown } | null)?.parsed;
    if (typeof answer !== "object" || answer === null || !Array.isArray(parsed)) {
      throw new UnavailableError(
        "Pyth prices are unavailable: Hermes answered something that is not a price update",
      );
    }
    const prices = new Map<string, PythPrice>();
    for (const entry of parsed) {
      const id = (entry as { id?: unknown } | null)?.id;
      if (typeof id !== "string" || prices.has(id.toLowerCase())) continue;
      const price = priceOf((entry as { price?: unknown }).price);
      if (price !== undefined) prices.set(id.toLowerCase(), price);
    }
    return prices;
  }

  return {
    watchlist: Object.freeze(options.feeds.map((feed) => feed.mint)),
    async pricesOf(mints) {
      const feedIds = [...new Set(mints.flatMap((mint) => feedOf.get(mint)?.feedId ?? []))];
      const chunks: string[][] = [];
      for (let i = 0; i < feedIds.length; i += FEEDS_PER_REQUEST)
        chunks.push(feedIds.slice(i, i + FEEDS_PER_REQUEST));
      const answers = await Promise.all(chunks.map(latest));
      const read = now();
      return mints.map((mint): TokenPrice => {
        const feed = feedOf.get(mint);
        const price =
          feed === undefined ? undefined : answers.find((a) => a.has(feed.feedId))?.get(feed.feedId);
        const symbol = feed?.symbol ?? "";
        return price === undefined
          ? { mint, symbol, price: 0, change24h: 0, asOf: read, slot: 0, unpriced: true }
          : {
              mint,
              symbol,
              price: price.price,
              change24h: 0,
              asOf: price.publishTime,
              slot: 0,
              unpriced: false,
            };
      });
    },
  };
}

/** A `price` object as Pyth documents it, or undefined when it is not one or is no reliable price. */
function priceOf(value: unknown): PythPrice | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const { price, conf, expo, publish_time: publishTime } = value as Record<string, unknown>;
  if (typeof price !== "string" || !INT64.test(price) || typeof conf !== "string" || !INT64.test(conf)) {
    return undefined;
  }
  if (!Number.isSafeInteger(expo) || (expo as number) < MIN_EXPO || (expo as number) > MAX_EXPO)
    return undefined;
  if (
    !Number.isSafeInteger(publishTime) ||
    (publishTime as number) <= 0 ||
    (publishTime as number) > MAX_SECONDS
  )
    return undefined;
  // Scaled in decimal, so 2920679499999 × 10^-8 is 29206.79499999 exactly as a double can hold it.
  const usd = Number(`${price}e${expo}`);
  const confidence = Number(`${conf}e${expo}`);
  if (!(Number.isFinite(usd) && usd > 0)) return undefined;
  if (!(Number.isFinite(confidence) && confidence >= 0 && confidence <= usd * MAX_CONFIDENCE_RATIO)) {
    return undefined;
  }
  return { price: usd, publishTime: new Date((publishTime as number) * 1000) };
}

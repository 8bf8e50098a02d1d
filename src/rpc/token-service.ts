import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import {
  GetTokenMetadataResponseSchema,
  GetTokenPricesResponseSchema,
  GetTokenTransactionsResponseSchema,
  TokenMetadataSchema,
  TokenPriceSchema,
  type TokenService,
  TokenTransactionSchema,
  type WatchTokenPricesResponse,
  WatchTokenPricesResponseSchema,
} from "../../gen/token/v1/token_pb.ts";
import { deepFreeze } from "../lean/deep-freeze.ts";
import type { PriceWatch } from "../token/price-watch.ts";
import type { TokenQueries } from "../token/token-queries.ts";
import type { TokenMetadata, TokenPrice, TokenTransaction } from "../token/token-source.ts";
import { type StreamSettings, serveStream } from "./server-stream.ts";

/**
 * TokenService over the token queries: protobuf in, domain values across, protobuf out.
 * Prices stay the same object while cached (the catalog's for good, or for a tick), so each domain
 * object is converted to its message once and the message reused (keyed weakly by the domain
 * object, so fresh objects are simply collected). The call's signal goes down to the chain, so reads stop when the caller goes away.
 */
export function createTokenService(options: {
  queries: TokenQueries;
  /** WatchTokenPrices: the shared price poll, and the limits every stream shares. */
  priceWatch?: PriceWatch;
  streams?: StreamSettings;
}): ServiceImpl<typeof TokenService> {
  const { queries } = options;
  // A price entry is one object for as long as it is cached, so its message is made once too.
  const price = messageCache((p: TokenPrice) =>
    create(TokenPriceSchema, {
      mint: p.mint,
      symbol: p.symbol,
      price: p.price,
      change24h: p.change24h,
      asOf: timestampFromDate(p.asOf),
      slot: BigInt(p.slot),
      unpriced: p.unpriced,
    }),
  );
  const metadata = messageCache((m: TokenMetadata) =>
    create(TokenMetadataSchema, {
      mint: m.mint,
      symbol: m.symbol,
      name: m.name,
      decimals: m.decimals,
      logoUri: m.logoURI,
      tags: [...m.tags],
    }),
  );
  const transaction = messageCache((t: TokenTransaction) => create(TokenTransactionSchema, t));
  return {
    async getTokenPrices(req) {
      const prices = await queries.getPrices({ mint: req.mint, symbol: req.symbol, mints: req.mints });
      return create(GetTokenPricesResponseSchema, { success: true, data: prices.map(price) });
    },
    async getTokenMetadata(req, ctx) {
      const found = await queries.getMetadata(req.mint, ctx.signal);
      return create(GetTokenMetadataResponseSchema, { success: true, data: metadata(found) });
    },
    async getTokenTransactions(req, ctx) {
      const page = await queries.getTransactions(
        { mint: req.mint, limit: req.limit, before: req.before },
        ctx.signal,
      );
      return create(GetTokenTransactionsResponseSchema, { success: true, data: page.map(transaction) });
    },
    watchTokenPrices(req, ctx) {
      const { priceWatch, streams } = options;
      if (priceWatch === undefined || streams === undefined) {
        throw new ConnectError("price streams are not served by this server", Code.Unimplemented);
      }
      return serveStream<readonly TokenPrice[], WatchTokenPricesResponse>(streams, ctx, {
        rpc: "WatchTokenPrices",
        async start(queue) {
          const mints = await queries.watchedMints({ mints: req.mints, symbols: req.symbols });
          // A poll may report changes before this call resumes from `subscribe`: they are held
          // until the first message is queued, so no change ever goes out ahead of it.
          let early: (readonly TokenPrice[])[] | undefined = [];
          const subscription = await priceWatch.subscribe(
            mints,
            (changed) => (early === undefined ? queue.offer(changed) : early.push(changed)),
            (error) => queue.fail(error),
          );
          // The first message holds every current price (none, for a symbol nobody has).
          queue.offer(subscription.initial);
          for (const changed of early) queue.offer(changed);
          early = undefined;
          return subscription;
        },
        message: (prices) =>
          create(WatchTokenPricesResponseSchema, { success: true, data: prices.map(price) }),
        heartbeat: create(WatchTokenPricesResponseSchema, { success: true, heartbeat: true }),
      });
    },
  };
}

/** Memoises `convert` per domain object, so static data is converted once, not on every call. */
function messageCache<T extends object, M extends object>(convert: (value: T) => M): (value: T) => M {
  const cache = new WeakMap<T, M>();
  return (value) => {
    let message = cache.get(value);
    if (message === undefined) {
      // Frozen, deeply: a message shared by every answer must not change under any of them, and
      // the lean path writes a frozen message's bytes once (see deep-freeze.ts).
      message = deepFreeze(convert(value));
      cache.set(value, message);
    }
    return message;
  };
}

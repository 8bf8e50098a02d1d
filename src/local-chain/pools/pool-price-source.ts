import type { Address, RpcTransport } from "@solana/kit";
import { createChainRpc } from "../../chain/chain-rpc.ts";
import { UnavailableError } from "../../domain/errors.ts";
import type { Catalog } from "../../token/catalog.ts";
import type { PriceQuery, PriceSource, TokenPrice } from "../../token/token-source.ts";
import type { CacheLookup } from "../../upstream/swr-cache.ts";
import { type PoolPricing, poolPrices, roundPoolPrice } from "./pool-prices.ts";

/** The vaults' token balances (undefined: no such account) and the slot they were read at. */
export interface VaultReading {
  readonly slot: number;
  readonly amounts: readonly (bigint | undefined)[];
}

export interface PoolPriceSourceOptions {
  readonly pricing: PoolPricing;
  /** Reads the vaults' balances at once, from the chain. */
  readVaults(vaults: readonly string[]): Promise<VaultReading>;
  /** Prices what no pool prices (the stablecoins, tokens without a pool, unknown mints); its watchlist is this one's. */
  readonly fallback: PriceSource;
  /** Symbols, and the price a day before the snapshot that change24h is measured from. */
  readonly catalog: Catalog;
  /** How long one reading of the pools is fresh (at most PRICE_TTL_MS: the chain's slot time). */
  readonly ttlMs: number;
  /** PRICE_MAX_STALE_MS: how old a reading displays may still be given while the chain cannot be read. */
  readonly maxStaleMs: number;
  readonly onLookup?: (lookup: CacheLookup, count: number) => void;
  readonly now?: () => number;
}

/** One reading of the pools: an entry per pooled token, and the watchlist's answer. */
interface Reading {
  readonly at: number;
  readonly entries: ReadonlyMap<string, TokenPrice>;
  readonly watched: readonly TokenPrice[];
}

/** Vaults one getMultipleAccounts names at most (the chain's bound). */
const VAULTS_PER_READ = 100;

/**
 * Dollar prices of the embedded chain's pooled tokens from its pools' current reserves (their
 * mid price, pool-prices.ts), so that a swap, a developer's cheatcode (surfnet_setTokenPrice) or
 * anything else that moves a pool moves the price; everything else from `fallback` (the catalog).
 *
 * One reading of every pool's vaults (one getMultipleAccounts, in-process) prices every pooled
 * token, and is fresh for `ttlMs`: the hot path hands out the reading's frozen entries (the
 * watchlist's answer is one frozen array per reading). For one more `ttlMs` displays are still
 * given it while one read refreshes it, so a busy service's calls never wait on the chain; after
 * that, and for a `fresh` query (a swap's reference) as soon as it expires, calls wait for a new
 * reading, concurrent ones on the same read. So a moved pool shows within one `ttlMs` to a trade
 * and two to a display. An entry's `asOf` is when it was
 * read, its `slot` the first slot at which the service read the price it shows (so a stream sees a
 * change only when a pool moved). While the chain cannot be read (its worker restarting), displays
 * are given the last reading up to `maxStaleMs` after it was made, and past that (or before any)
 * the fallback's prices, so GetTokenPrices is served while the chain is away; a `fresh` query
 * (a trade) is unavailable instead.
 */
export function createPoolPriceSource(options: PoolPriceSourceOptions): PriceSource {
  const { pricing, fallback, ttlMs, maxStaleMs } = options;
  const now = options.now ?? Date.now;
  const onLookup = options.onLookup ?? (() => {});
  const watchlist = fallback.watchlist;
  const watchesPooled = watchlist.some((mint) => pricing.routes.has(mint));
  const symbols = new Map(options.catalog.tokens.map((t) => [t.mint, t.symbol]));
  /** The price a day before the catalog's snapshot: change24h is measured from it. */
  const dayBefore = new Map(options.catalog.tokens.map((t) => [t.mint, t.price / (1 + t.change24h / 100)]));
  let reading: Reading | undefined;
  let loading: Promise<Reading> | undefined;
  let lastFailure: unknown;

  const read = async (): Promise<Reading> => {
    const [{ slot, amounts }, base] = await Promise.all([
      options.readVaults(pricing.vaults),
      fallback.pricesOf(watchlist),
    ]);
    const at = now();
    const asOf = new Date(at);
    const balances = new Map(pricing.vaults.map((vault, i) => [vault, amounts[i]]));
    const entries = new Map<string, TokenPrice>();
    for (const [mint, unrounded] of poolPrices(pricing, (vault) => balances.get(vault))) {
      const price = roundPoolPrice(unrounded);
      const before = reading?.entries.get(mint);
      const past = dayBefore.get(mint);
      entries.set(
        mint,
        Object.freeze({
          mint,
          symbol: symbols.get(mint) ?? "",
          price,
          change24h: past === undefined ? 0 : Number(((price / past - 1) * 100).toFixed(2)),
          asOf,
          // The slot it first read this price at: a reading that finds the pools as they were is no change.
          slot: before !== undefined && before.price === price ? before.slot : slot,
          unpriced: false,
        }),
      );
    }
    // A pooled token whose pool is empty (or gone) has no reliable price: unpriced, not the catalog's.
    for (const mint of pricing.routes.keys()) {
      if (entries.has(mint)) continue;
      const symbol = symbols.get(mint) ?? "";
      entries.set(mint, Object.freeze({ mint, symbol, price: 0, change24h: 0, asOf, slot, unpriced: true }));
    }
    const watched = Object.freeze(base.map((entry) => entries.get(entry.mint) ?? entry));
    return { at, entries, watched };
  };

  const load = (): Promise<Reading> => {
    loading ??= read()
      .then(
        (made) => {
          reading = made;
          return made;
        },
        (error: unknown) => {
          lastFailure = error;
          throw error;
        },
      )
      .finally(() => {
        loading = undefined;
      });
    return loading;
  };

  const answer = async (
    from: Reading,
    mints: readonly string[],
    query: PriceQuery | undefined,
  ): Promise<readonly TokenPrice[]> => {
    if (mints === watchlist) return from.watched;
    const others = mints.filter((mint) => !from.entries.has(mint));
    if (others.length === 0) return mints.map((mint) => from.entries.get(mint) as TokenPrice);
    const fallen = await fallback.pricesOf(others, query);
    const byMint = new Map(others.map((mint, i) => [mint, fallen[i] as TokenPrice]));
    return mints.map((mint) => from.entries.get(mint) ?? (byMint.get(mint) as TokenPrice));
  };

  const unavailable = (): UnavailableError => {
    const reason = lastFailure instanceof Error ? `: ${lastFailure.message}` : "";
    if (reading === undefined)
      return new UnavailableError(`the local pools' prices are unavailable${reason}`);
    const seconds = (ms: number) => `${Number((ms / 1000).toFixed(1))} s`;
    return new UnavailableError(
      `the local pools' prices are stale (read ${seconds(now() - reading.at)} ago, fresh for ${seconds(ttlMs)}) and could not be read again${reason}`,
    );
  };

  const refreshed = async (
    mints: readonly string[],
    query: PriceQuery | undefined,
  ): Promise<readonly TokenPrice[]> => {
    onLookup("miss", mints.length);
    try {
      return await answer(await load(), mints, query);
    } catch (error) {
      if (error !== lastFailure) throw error;
      // A trade never takes a price the pools were not just read for.
      if (query?.fresh === true) throw unavailable();
      // Displays are still served: the last reading while it is young enough, else the fallback's
      // (the catalog's snapshot, which the pools were seeded at; its asOf and slot say so).
      const last = reading;
      if (last !== undefined && now() - last.at <= maxStaleMs) return answer(last, mints, query);
      return fallback.pricesOf(mints, query);
    }
  };

  return {
    watchlist,
    pricesOf(mints, query) {
      const pooled = mints === watchlist ? watchesPooled : mints.some((mint) => pricing.routes.has(mint));
      if (!pooled) return fallback.pricesOf(mints, query);
      const last = reading;
      const age = last === undefined ? Number.POSITIVE_INFINITY : now() - last.at;
      if (last !== undefined && age < ttlMs) {
        onLookup("hit", mints.length);
        return mints === watchlist ? Promise.resolve(last.watched) : answer(last, mints, query);
      }
      if (last !== undefined && query?.fresh !== true && age < 2 * ttlMs) {
        // A busy service's displays never wait on the chain: the reading just expired is theirs
        // while one read refreshes it (a failed one is told to the next call that waits).
        onLookup("stale", mints.length);
        void load().catch(() => undefined);
        return mints === watchlist ? Promise.resolve(last.watched) : answer(last, mints, query);
      }
      return refreshed(mints, query);
    },
  };
}

/**
 * The pool price source on a chain reached through `transport` (the embedded chain's in-process
 * transport): the vaults read at `processed`, as the local routes quote them, so that a route and
 * the price it is held to come from the same reserves.
 */
export function createEmbeddedPoolPriceSource(
  options: Omit<PoolPriceSourceOptions, "readVaults"> & { readonly transport: RpcTransport },
): PriceSource {
  const rpc = createChainRpc(options.transport);
  return createPoolPriceSource({
    ...options,
    async readVaults(vaults) {
      let slot = 0;
      const amounts: (bigint | undefined)[] = [];
      for (let i = 0; i < vaults.length; i += VAULTS_PER_READ) {
        const { context, value } = await rpc
          .getMultipleAccounts(vaults.slice(i, i + VAULTS_PER_READ) as Address[], {
            encoding: "base64",
            commitment: "processed",
          })
          .send();
        slot = Math.max(slot, Number(context.slot));
        for (const account of value) {
          const data = account === null ? undefined : Buffer.from(account.data[0], "base64");
          // A token account's amount: a u64 after its mint and owner.
          amounts.push(data === undefined || data.length < 72 ? undefined : data.readBigUInt64LE(64));
        }
      }
      return { slot, amounts };
    },
  });
}

import { type Catalog, usdStablecoinMints } from "../../token/catalog.ts";
import type { ChainKeys } from "../state/chain-keys.ts";
import { type LocalPool, localPools } from "./local-pools.ts";

/**
 * Dollar prices from the local pools' reserves (their mid price: no fee, no trade size), shared by
 * the service's price source on the embedded chain (pool-price-source.ts) and the cheatcode that
 * moves a token's price (../cheatcodes/set-token-price.ts), so that what one writes the other
 * reads. A token is priced by a pool that pairs it with a US dollar stablecoin (worth 1) when it
 * has one, else by a pool that pairs it with a token priced so (SOL, for tokens paired only with
 * SOL). Stablecoins are not priced here: they are worth 1.
 */

/** How one token is priced: one of its pools and the other side's price. */
export interface PoolPriceRoute {
  readonly mint: string;
  readonly pool: LocalPool;
  /** The token is the pool's side A (its quote side B). */
  readonly tokenIsA: boolean;
  /** The other side's mint: a stablecoin, or a token whose route comes earlier. */
  readonly quote: string;
}

export interface PoolPricing {
  /** Priced 1, never from a pool (usdStablecoinMints). */
  readonly stablecoins: ReadonlySet<string>;
  /** Each pooled token's route, in an order where a route's quote is priced before it. */
  readonly routes: ReadonlyMap<string, PoolPriceRoute>;
  /** Every pool that holds each pooled token (what moving its price rebalances). */
  readonly poolsOf: ReadonlyMap<string, readonly LocalPool[]>;
  /** The vaults the routes read, each once: one getMultipleAccounts prices every pooled token. */
  readonly vaults: readonly string[];
}

/** How the pools of a chain's own `keys` over `catalog` price its tokens. */
export async function chainPoolPricing(
  catalog: Catalog,
  keys: Pick<ChainKeys, "pool">,
): Promise<PoolPricing> {
  return poolPricing(await localPools(catalog, keys), usdStablecoinMints(catalog));
}

/** Significant digits a pool price keeps: the catalog's snapshot reads back exactly. */
const PRICE_DIGITS = 8;

export function poolPricing(pools: readonly LocalPool[], stablecoins: ReadonlySet<string>): PoolPricing {
  const routes = new Map<string, PoolPriceRoute>();
  // First the pools against a stablecoin, then, pass after pass, those against a token priced.
  const addRoutes = (quoteIsPriced: (quote: string) => boolean): boolean => {
    let added = false;
    for (const pool of pools) {
      for (const tokenIsA of [true, false]) {
        const mint = tokenIsA ? pool.mintA : pool.mintB;
        const quote = tokenIsA ? pool.mintB : pool.mintA;
        if (stablecoins.has(mint) || routes.has(mint) || !quoteIsPriced(quote)) continue;
        routes.set(mint, { mint, pool, tokenIsA, quote });
        added = true;
      }
    }
    return added;
  };
  addRoutes((quote) => stablecoins.has(quote));
  let more = true;
  while (more) more = addRoutes((quote) => stablecoins.has(quote) || routes.has(quote));
  const poolsOf = new Map<string, LocalPool[]>();
  for (const pool of pools) {
    for (const mint of [pool.mintA, pool.mintB]) {
      if (!routes.has(mint)) continue;
      const held = poolsOf.get(mint) ?? [];
      held.push(pool);
      poolsOf.set(mint, held);
    }
  }
  const vaults = [...new Set([...routes.values()].flatMap((r) => [r.pool.vaultA, r.pool.vaultB]))];
  return { stablecoins, routes, poolsOf, vaults };
}

/**
 * Each pooled token's dollar price from the vaults' balances (`reserveOf`), unrounded; a token
 * whose pool is empty or missing, or whose quote has no price, is left out.
 */
export function poolPrices(
  pricing: PoolPricing,
  reserveOf: (vault: string) => bigint | undefined,
): Map<string, number> {
  const prices = new Map<string, number>();
  for (const route of pricing.routes.values()) {
    const quoteUsd = usdOf(pricing, prices, route.quote);
    if (quoteUsd === undefined) continue;
    const { pool } = route;
    const [token, quote] = route.tokenIsA
      ? [reserveOf(pool.vaultA), reserveOf(pool.vaultB)]
      : [reserveOf(pool.vaultB), reserveOf(pool.vaultA)];
    const [tokenDecimals, quoteDecimals] = route.tokenIsA
      ? [pool.decimalsA, pool.decimalsB]
      : [pool.decimalsB, pool.decimalsA];
    if (token === undefined || quote === undefined || token <= 0n || quote <= 0n) continue;
    const mid = (Number(quote) / Number(token)) * 10 ** (tokenDecimals - quoteDecimals);
    if (Number.isFinite(mid) && mid > 0) prices.set(route.mint, mid * quoteUsd);
  }
  return prices;
}

/** A mint's dollar price among `prices` (1 for a stablecoin); undefined when it has none. */
export function usdOf(
  pricing: PoolPricing,
  prices: ReadonlyMap<string, number>,
  mint: string,
): number | undefined {
  return pricing.stablecoins.has(mint) ? 1 : prices.get(mint);
}

/** A pool price as the service shows it: 8 significant digits, no float noise. */
export function roundPoolPrice(price: number): number {
  return Number(price.toPrecision(PRICE_DIGITS));
}

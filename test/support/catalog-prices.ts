import { expect } from "vitest";
import type { CatalogToken } from "../../src/token/catalog.ts";
import { loadCatalog, usdStablecoinMints } from "../../src/token/catalog.ts";

const catalog = loadCatalog();
const stablecoins = usdStablecoinMints(catalog);
/** The catalog's snapshot time, as proto3 JSON writes a Timestamp. */
export const CATALOG_AS_OF = new Date(catalog.asOf).toISOString().replace(".000Z", "Z");

/** A catalog token by symbol; throws when the catalog lacks it. */
export function catalogToken(symbol: string): CatalogToken {
  const token = catalog.tokens.find((t) => t.symbol === symbol);
  if (token === undefined) throw new Error(`the catalog lacks ${symbol}`);
  return token;
}

/**
 * A catalog token's GetTokenPrices entry on the embedded chain, as proto3 JSON with every field
 * (what the service writes); `omitZero` leaves out the fields at their zero value, as clients that
 * do not emit them (buf curl). A stablecoin's is the catalog's snapshot; a pooled token's price is
 * its local pools' mid price, the catalog's while nothing moved them, read at a time (`asOf`) and
 * slot of the chain's (docs/tokens.md).
 */
export function catalogPriceJson(token: CatalogToken, options: { omitZero?: boolean } = {}) {
  const pooled = !stablecoins.has(token.mint);
  const entry = {
    mint: token.mint,
    symbol: token.symbol,
    price: token.price,
    change24h: token.change24h,
    asOf: pooled ? expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/) : CATALOG_AS_OF,
  };
  const slot = pooled ? { slot: expect.stringMatching(/^[1-9]\d*$/) } : {};
  return options.omitZero === true
    ? { ...entry, ...slot }
    : { ...entry, slot: "0", ...slot, unpriced: false };
}

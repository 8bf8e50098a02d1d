import type { CatalogToken } from "../../src/token/catalog.ts";
import { loadCatalog } from "../../src/token/catalog.ts";

const catalog = loadCatalog();
/** The catalog's snapshot time, as proto3 JSON writes a Timestamp. */
export const CATALOG_AS_OF = new Date(catalog.asOf).toISOString().replace(".000Z", "Z");

/** A catalog token by symbol; throws when the catalog lacks it. */
export function catalogToken(symbol: string): CatalogToken {
  const token = catalog.tokens.find((t) => t.symbol === symbol);
  if (token === undefined) throw new Error(`the catalog lacks ${symbol}`);
  return token;
}

/**
 * A catalog token's GetTokenPrices entry as proto3 JSON with every field (what the service writes);
 * `omitZero` leaves out the fields at their zero value, as clients that do not emit them (buf curl).
 */
export function catalogPriceJson(token: CatalogToken, options: { omitZero?: boolean } = {}) {
  const entry = {
    mint: token.mint,
    symbol: token.symbol,
    price: token.price,
    change24h: token.change24h,
    asOf: CATALOG_AS_OF,
  };
  return options.omitZero === true ? entry : { ...entry, slot: "0", unpriced: false };
}

/**
 * The embedded token list (`catalog.json`): real Solana mainnet mints with their symbols, names,
 * decimals, logos and tags, and a fixed price snapshot. It is the token list behind GetTokenPrices,
 * the logos and tags of GetTokenMetadata, the tokens agents may name, and what the embedded local
 * chain creates at the mints' real addresses. It is checked once when loaded, so no caller has to.
 */
import { readFileSync } from "node:fs";
import { isAddress } from "@solana/addresses";

export interface CatalogToken {
  readonly mint: string;
  readonly symbol: string;
  readonly name: string;
  readonly decimals: number;
  readonly logoURI: string;
  readonly tags: readonly string[];
  readonly price: number;
  readonly change24h: number;
}

export interface Catalog {
  /** When the price snapshot was taken. */
  readonly asOf: string;
  /** In the order GetTokenPrices lists them. */
  readonly tokens: readonly CatalogToken[];
}

/** Reads and validates the embedded catalog; throws if the file is not what the service relies on. */
export function loadCatalog(): Catalog {
  const text = readFileSync(new URL("./catalog.json", import.meta.url), "utf8");
  return validateCatalog(JSON.parse(text));
}

/** Checks the shape and the invariants once, so that no call has to. */
export function validateCatalog(data: unknown): Catalog {
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
  text(root.asOf, "asOf");
  if (!Array.isArray(root.tokens) || root.tokens.length === 0) fail("tokens is not a non-empty array");
  const mints = new Set<string>();
  const symbols = new Set<string>();
  for (const [i, value] of (root.tokens as unknown[]).entries()) {
    const token = record(value, `tokens[${i}]`);
    const mint = text(token.mint, `tokens[${i}].mint`);
    const where = `token ${mint}`;
    if (!isAddress(mint)) fail(`${where}: mint is not a Solana address`);
    if (mints.has(mint)) fail(`${where}: duplicate mint`);
    mints.add(mint);
    const symbol = text(token.symbol, `${where}.symbol`).toLowerCase();
    if (symbols.has(symbol)) fail(`${where}: symbol ${token.symbol} is not unique (case-insensitively)`);
    symbols.add(symbol);
    text(token.name, `${where}.name`);
    text(token.logoURI, `${where}.logoURI`);
    const decimals = token.decimals;
    if (!Number.isInteger(decimals) || (decimals as number) < 0 || (decimals as number) > 18) {
      fail(`${where}: decimals is not an integer from 0 to 18`);
    }
    if (!Array.isArray(token.tags) || !token.tags.every((tag) => typeof tag === "string")) {
      fail(`${where}: tags is not an array of strings`);
    }
    if (!(finite(token.price, `${where}.price`) > 0)) fail(`${where}: price is not positive`);
    finite(token.change24h, `${where}.change24h`);
  }
  return data as Catalog;
}

/**
 * The catalog's spelling of a symbol (matched case-insensitively), or undefined when no catalog
 * token has it: agents name their tokens by catalog symbol.
 */
export function catalogSymbolLookup(catalog: Catalog): (symbol: string) => string | undefined {
  const symbols = new Map(catalog.tokens.map((t) => [t.symbol.toLowerCase(), t.symbol]));
  return (symbol) => symbols.get(symbol.toLowerCase());
}

/**
 * The catalog's US dollar stablecoins (tagged `stablecoin` and priced 1): priced 1 wherever the
 * service prices tokens, never from a pool, and the unit the local pools quote in.
 */
export function usdStablecoinMints(catalog: Catalog): ReadonlySet<string> {
  return new Set(
    catalog.tokens.filter((t) => t.tags.includes("stablecoin") && t.price === 1).map((t) => t.mint),
  );
}

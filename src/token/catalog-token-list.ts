import type { Catalog } from "./catalog.ts";
import type { TokenList, TokenListing } from "./token-source.ts";

/** The embedded catalog as the token list: every token in it counts as verified. */
export function createCatalogTokenList(options: { catalog: Catalog }): TokenList {
  const listings = new Map<string, TokenListing>(
    options.catalog.tokens.map(({ mint, symbol, name, logoURI, tags }) => [
      mint,
      Object.freeze({ mint, symbol, name, logoURI, tags, verified: true }),
    ]),
  );
  const bySymbol = new Map<string, readonly string[]>();
  for (const { mint, symbol } of listings.values()) {
    const key = symbol.toLowerCase();
    bySymbol.set(key, [...(bySymbol.get(key) ?? []), mint]);
  }
  return {
    listingsOf: (mints) =>
      Promise.resolve(
        new Map(
          mints.flatMap((mint) => {
            const listing = listings.get(mint);
            return listing === undefined ? [] : [[mint, listing] as const];
          }),
        ),
      ),
    mintsWithSymbol: (symbol) => Promise.resolve(bySymbol.get(symbol.toLowerCase()) ?? []),
  };
}

import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { isAddress, isBase58OfSize } from "../src/domain/base58.ts";
import { createCatalogTokenSource, loadCatalog } from "../src/token/catalog-token-source.ts";
import type { TokenTransaction } from "../src/token/token-source.ts";

const WRAPPED_SOL = "So11111111111111111111111111111111111111112";
const USDC = "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v";

const catalog = loadCatalog();
const source = createCatalogTokenSource({ catalog });

/** Every transaction of a token, read through the public paging API only. */
async function walk(mint: string, limit: number): Promise<TokenTransaction[]> {
  const all: TokenTransaction[] = [];
  let before: string | undefined;
  for (;;) {
    const page = await source.listTransactions(mint, before === undefined ? { limit } : { limit, before });
    if (page.kind !== "page") throw new Error(`unexpected ${page.kind}`);
    expect(page.transactions.length).toBeLessThanOrEqual(limit);
    all.push(...page.transactions);
    if (page.transactions.length < limit) return all;
    before = page.transactions.at(-1)?.signature;
  }
}

describe("catalog token source", () => {
  it("lists at least 12 tokens, including wrapped SOL, with valid metadata", async () => {
    const prices = await source.listPrices();
    expect(prices.length).toBeGreaterThanOrEqual(12);
    expect(prices.map((p) => p.mint)).toContain(WRAPPED_SOL);
    for (const price of prices) {
      expect(isAddress(price.mint)).toBe(true);
      expect(price.price).toBeGreaterThan(0);
      expect(Object.keys(price).sort()).toEqual(["change24h", "mint", "price", "symbol"]);
      const metadata = await source.getMetadata(price.mint);
      expect(metadata?.symbol).toBe(price.symbol);
      expect(metadata && Object.keys(metadata).sort()).toEqual([
        "decimals",
        "logoURI",
        "mint",
        "name",
        "symbol",
        "tags",
      ]);
      expect(metadata?.logoURI).toMatch(/^https:\/\//);
      expect(Object.isFrozen(metadata)).toBe(true);
    }
    expect((await source.getMetadata(WRAPPED_SOL))?.decimals).toBe(9);
    expect((await source.getMetadata(USDC))?.symbol).toBe("USDC");
  });

  it("returns the price list in the same order on every call", async () => {
    const first = (await source.listPrices()).map((p) => p.mint);
    const second = (await source.listPrices()).map((p) => p.mint);
    expect(second).toEqual(first);
    expect(first).toEqual(catalog.tokens.map((t) => t.mint));
    expect(Object.isFrozen(await source.listPrices())).toBe(true);
  });

  it("holds at least 300 well-formed transactions per token, in service order, with ties", async () => {
    const signatures = new Set<string>();
    const types = new Set<string>();
    let ties = 0;
    for (const { mint } of await source.listPrices()) {
      const transactions = await walk(mint, 100);
      expect(transactions.length).toBeGreaterThanOrEqual(300);
      for (const [i, tx] of transactions.entries()) {
        expect(isBase58OfSize(tx.signature, 64)).toBe(true);
        expect(signatures.has(tx.signature)).toBe(false);
        signatures.add(tx.signature);
        expect(isAddress(tx.sender) && isAddress(tx.recipient)).toBe(true);
        expect(tx.sender).not.toBe(tx.recipient);
        expect(Number.isInteger(tx.blockTime)).toBe(true);
        expect(tx.amount).toBeGreaterThan(0);
        types.add(tx.type);
        const previous = transactions[i - 1];
        if (previous === undefined) continue;
        if (previous.blockTime === tx.blockTime) {
          ties++;
          expect(previous.signature < tx.signature).toBe(true);
        } else {
          expect(previous.blockTime).toBeGreaterThan(tx.blockTime);
        }
      }
    }
    expect(types.size).toBeGreaterThanOrEqual(4);
    expect(types).toContain("transfer");
    expect(ties).toBeGreaterThan(0);
  });

  it("visits every transaction exactly once, in order, when paging by 7 with before cursors", async () => {
    for (const token of catalog.tokens) {
      const walked = await walk(token.mint, 7);
      expect(walked.map((tx) => tx.signature)).toEqual(token.transactions.map((tx) => tx.signature));
    }
  });

  it("tells an unknown mint from an unknown cursor", async () => {
    const unknownMint = "11111111111111111111111111111111";
    expect(await source.listTransactions(unknownMint, { limit: 5 })).toEqual({ kind: "unknown-mint" });
    expect(await source.getMetadata(unknownMint)).toBeUndefined();

    const usdcSignature = catalog.tokens.find((t) => t.mint === USDC)?.transactions[0]?.signature;
    expect(usdcSignature).toBeDefined();
    expect(await source.listTransactions(WRAPPED_SOL, { limit: 5, before: usdcSignature })).toEqual({
      kind: "unknown-cursor",
    });
    expect(await source.listTransactions(WRAPPED_SOL, { limit: 5, before: "1".repeat(64) })).toEqual({
      kind: "unknown-cursor",
    });
  });

  it("returns an empty page after the oldest transaction", async () => {
    const oldest = catalog.tokens[0]?.transactions.at(-1)?.signature;
    const page = await source.listTransactions(catalog.tokens[0]?.mint ?? "", { limit: 10, before: oldest });
    expect(page).toEqual({ kind: "page", transactions: [] });
  });

  it("finds catalog symbols case-insensitively", async () => {
    expect(await source.canonicalSymbol("usdc")).toBe("USDC");
    expect(await source.canonicalSymbol("MSOL")).toBe("mSOL");
    expect(await source.canonicalSymbol("nope")).toBeUndefined();
  });

  it("loads the embedded catalog by default", async () => {
    const defaults = createCatalogTokenSource();
    expect((await defaults.listPrices()).map((p) => p.symbol)).toEqual(catalog.tokens.map((t) => t.symbol));
  });

  it("rejects a catalog that breaks the order rule", () => {
    const [first, ...rest] = catalog.tokens;
    if (first === undefined) throw new Error("empty catalog");
    const broken = {
      ...catalog,
      tokens: [{ ...first, transactions: [...first.transactions].reverse() }, ...rest],
    };
    expect(() => createCatalogTokenSource({ catalog: broken })).toThrow(/out of order/);
  });

  it("is reproduced byte for byte by the generator", () => {
    const script = fileURLToPath(new URL("../scripts/generate-catalog.ts", import.meta.url));
    const committed = fileURLToPath(new URL("../src/token/catalog.json", import.meta.url));
    const dir = mkdtempSync(join(tmpdir(), "catalog-"));
    try {
      const output = join(dir, "catalog.json");
      const run = spawnSync(process.execPath, [script, output], { encoding: "utf8" });
      expect(run.status, run.stderr).toBe(0);
      expect(readFileSync(output).equals(readFileSync(committed))).toBe(true);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

import { Code } from "@connectrpc/connect";
import { address, createSolanaRpc } from "@solana/kit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TokenService } from "../gen/token/v1/token_pb.ts";
import { loadCatalog } from "../src/token/catalog.ts";
import { createProtocols, type Outcome, type Protocol } from "./support/callers.ts";
import { CATALOG_AS_OF, catalogPriceJson } from "./support/catalog-prices.ts";
import { type RunningServer, startServer } from "./support/start-server.ts";

/*
 * The token contract, case by case, over every protocol: Connect JSON and binary, gRPC and
 * gRPC-Web through connect-node, and grpc-js as an independent gRPC client. Expected prices and
 * logos come from the catalog file; expected histories from the embedded local chain itself, read
 * over its JSON-RPC port with @solana/kit (getSignaturesForAddress), not from the service's code.
 * What each transaction says (amount, sender, recipient) is checked in token-chain.test.ts, on
 * transfers the test makes itself.
 */

const catalog = loadCatalog();
const [sol, usdc, bonk] = ["SOL", "USDC", "BONK"].map((s) => {
  const token = catalog.tokens.find((t) => t.symbol === s);
  if (token === undefined) throw new Error(`catalog lacks ${s}`);
  return token;
}) as [(typeof catalog.tokens)[number], (typeof catalog.tokens)[number], (typeof catalog.tokens)[number]];
/** A valid address that no catalog token uses. */
const UNKNOWN_MINT = "11111111111111111111111111111111";
const priceJson = (t: typeof sol) => catalogPriceJson(t);
const unpricedJson = (mint: string, symbol = "") => ({
  mint,
  symbol,
  price: 0,
  change24h: 0,
  asOf: CATALOG_AS_OF,
  slot: "0",
  unpriced: true,
});
/** A token's whole history as the chain lists it (newest first): signature and blockTime. */
type History = { signature: string; blockTime: number }[];
const histories = new Map<string, History>();
const history = (t: typeof sol): History => histories.get(t.mint) ?? [];
/** An entry of GetTokenTransactions as far as the chain's list fixes it. */
const listed = (entry: History[number]) =>
  expect.objectContaining({ signature: entry.signature, blockTime: entry.blockTime });

type Case = {
  name: string;
  method: "GetTokenPrices" | "GetTokenMetadata" | "GetTokenTransactions";
  /** Made when the case runs: some requests name the chain's own signatures. */
  request: Record<string, unknown> | (() => Record<string, unknown>);
  expect: (outcome: Outcome) => void;
};

const ok = (data: unknown) => (o: Outcome) => expect(o).toEqual({ ok: true, json: { success: true, data } });
const invalid =
  (...fields: { field: string; mentions: string }[]) =>
  (o: Outcome) => {
    expect(o.ok).toBe(false);
    if (o.ok) return;
    expect(o.code).toBe(Code.InvalidArgument);
    expect(o.violations.map((v) => v.field)).toEqual(fields.map((f) => f.field));
    fields.forEach((f, i) => {
      expect(o.violations[i]?.description).toContain(f.mentions);
      expect(o.message).toContain(f.field);
      // Plain text on every client: nothing left percent-encoded (grpc-js decodes with decodeURI).
      expect(o.message).not.toMatch(/%[0-9A-Fa-f]{2}/);
    });
  };
const notFound = (o: Outcome) => {
  expect(o.ok).toBe(false);
  if (!o.ok) expect(o.code).toBe(Code.NotFound);
};

const cases: Case[] = [
  {
    name: "prices: no filter returns every token in catalog order",
    method: "GetTokenPrices",
    request: {},
    expect: ok(catalog.tokens.map(priceJson)),
  },
  {
    name: "prices: by mint",
    method: "GetTokenPrices",
    request: { mint: usdc.mint },
    expect: ok([priceJson(usdc)]),
  },
  {
    name: "prices: symbol is case-insensitive",
    method: "GetTokenPrices",
    request: { symbol: "uSdC" },
    expect: ok([priceJson(usdc)]),
  },
  {
    name: "prices: mint and symbol must both match",
    method: "GetTokenPrices",
    request: { mint: sol.mint, symbol: "USDC" },
    expect: ok([]),
  },
  {
    name: "prices: mint and symbol both matching",
    method: "GetTokenPrices",
    request: { mint: bonk.mint, symbol: "bonk" },
    expect: ok([priceJson(bonk)]),
  },
  {
    name: "prices: unknown symbol is not_found, as an unknown mint's metadata is",
    method: "GetTokenPrices",
    request: { symbol: "NOPE" },
    expect: notFound,
  },
  {
    name: "prices: a valid mint without a price is an unpriced entry, not dropped",
    method: "GetTokenPrices",
    request: { mint: UNKNOWN_MINT },
    expect: ok([unpricedJson(UNKNOWN_MINT)]),
  },
  {
    name: "prices: mints in the order asked, repeats once, mint first",
    method: "GetTokenPrices",
    request: { mint: bonk.mint, mints: [sol.mint, UNKNOWN_MINT, bonk.mint, sol.mint, usdc.mint] },
    expect: ok([priceJson(bonk), priceJson(sol), unpricedJson(UNKNOWN_MINT), priceJson(usdc)]),
  },
  {
    name: "prices: mints and symbol keep the mints with that symbol",
    method: "GetTokenPrices",
    request: { mints: [sol.mint, usdc.mint, UNKNOWN_MINT], symbol: "usdc" },
    expect: ok([priceJson(usdc)]),
  },
  {
    name: "prices: 100 mints is the most",
    method: "GetTokenPrices",
    request: { mints: Array.from({ length: 101 }, () => sol.mint) },
    expect: invalid({ field: "mints", mentions: "at most 100" }),
  },
  {
    name: "prices: each bad mint of mints is named by its index",
    method: "GetTokenPrices",
    request: { mints: [sol.mint, "nope", usdc.mint, sol.mint.slice(0, 30)] },
    expect: invalid({ field: "mints[1]", mentions: "32-byte" }, { field: "mints[3]", mentions: "32-byte" }),
  },
  {
    name: "prices: a symbol with a comma is refused (it would be a search for mints)",
    method: "GetTokenPrices",
    request: { symbol: "SOL,USDC" },
    expect: invalid({ field: "symbol", mentions: "no comma" }),
  },
  {
    name: "prices: mint with characters outside base58",
    method: "GetTokenPrices",
    request: { mint: "0OIl0OIl0OIl0OIl0OIl0OIl0OIl0OIl" },
    expect: invalid({ field: "mint", mentions: "32-byte" }),
  },
  {
    name: "prices: base58 mint of the wrong size",
    method: "GetTokenPrices",
    request: { mint: sol.mint.slice(0, 30) },
    expect: invalid({ field: "mint", mentions: "32-byte" }),
  },
  {
    name: "metadata: every field of the token",
    method: "GetTokenMetadata",
    request: { mint: sol.mint },
    expect: ok({
      mint: sol.mint,
      symbol: sol.symbol,
      name: sol.name,
      decimals: sol.decimals,
      logoURI: sol.logoURI,
      tags: sol.tags,
    }),
  },
  {
    name: "metadata: missing mint",
    method: "GetTokenMetadata",
    request: {},
    expect: invalid({ field: "mint", mentions: "required" }),
  },
  {
    name: "metadata: malformed mint",
    method: "GetTokenMetadata",
    request: { mint: "not-a-mint" },
    expect: invalid({ field: "mint", mentions: "base58" }),
  },
  {
    name: "metadata: unknown mint",
    method: "GetTokenMetadata",
    request: { mint: UNKNOWN_MINT },
    expect: notFound,
  },
  {
    name: "transactions: limit omitted means 10, newest first",
    method: "GetTokenTransactions",
    request: { mint: sol.mint },
    expect: (o) => ok(history(sol).slice(0, 10).map(listed))(o),
  },
  {
    name: "transactions: limit 1",
    method: "GetTokenTransactions",
    request: { mint: sol.mint, limit: 1 },
    expect: (o) => ok(history(sol).slice(0, 1).map(listed))(o),
  },
  {
    name: "transactions: limit 100 is the maximum",
    method: "GetTokenTransactions",
    request: { mint: usdc.mint, limit: 100 },
    expect: (o) => ok(history(usdc).slice(0, 100).map(listed))(o),
  },
  {
    name: "transactions: limit 101 names the bound",
    method: "GetTokenTransactions",
    request: { mint: usdc.mint, limit: 101 },
    expect: invalid({ field: "limit", mentions: "100" }),
  },
  {
    name: "transactions: negative limit",
    method: "GetTokenTransactions",
    request: { mint: usdc.mint, limit: -1 },
    expect: invalid({ field: "limit", mentions: "must be an integer from 1 to 100 (0 or omitted means 10)" }),
  },
  {
    name: "transactions: before returns what follows the cursor",
    method: "GetTokenTransactions",
    request: () => ({ mint: bonk.mint, limit: 5, before: history(bonk)[9]?.signature }),
    expect: (o) => ok(history(bonk).slice(10, 15).map(listed))(o),
  },
  {
    name: "transactions: before the oldest is an empty list",
    method: "GetTokenTransactions",
    request: () => ({ mint: bonk.mint, before: history(bonk).at(-1)?.signature }),
    expect: ok([]),
  },
  {
    name: "transactions: before from another token",
    method: "GetTokenTransactions",
    request: () => ({ mint: bonk.mint, before: onlyOf(sol, bonk) }),
    expect: invalid({ field: "before", mentions: "this token" }),
  },
  {
    name: "transactions: before that is no signature",
    method: "GetTokenTransactions",
    request: { mint: bonk.mint, before: "nonsense" },
    expect: invalid({ field: "before", mentions: "signature" }),
  },
  {
    name: "transactions: before of a signature's length with characters outside base58",
    method: "GetTokenTransactions",
    request: { mint: bonk.mint, before: `${"a".repeat(28)}${"😀".repeat(30)}` },
    expect: invalid({ field: "before", mentions: "base58" }),
  },
  {
    name: "transactions: before that is a signature the chain never saw",
    method: "GetTokenTransactions",
    request: { mint: bonk.mint, before: "1".repeat(64) },
    expect: invalid({ field: "before", mentions: "this token" }),
  },
  {
    name: "transactions: unknown mint",
    method: "GetTokenTransactions",
    request: { mint: UNKNOWN_MINT },
    expect: notFound,
  },
  {
    name: "transactions: every bad field is reported at once",
    method: "GetTokenTransactions",
    request: { mint: "bad", limit: 500 },
    expect: invalid({ field: "mint", mentions: "base58" }, { field: "limit", mentions: "100" }),
  },
  {
    name: "transactions: missing mint",
    method: "GetTokenTransactions",
    request: {},
    expect: invalid({ field: "mint", mentions: "required" }),
  },
];

let server: RunningServer;
let protocols: Protocol[];

/** A signature in `a`'s history that `b`'s history does not hold. */
function onlyOf(a: typeof sol, b: typeof sol): string {
  const others = new Set(history(b).map((e) => e.signature));
  const found = history(a).find((e) => !others.has(e.signature));
  if (found === undefined) throw new Error(`every ${a.symbol} transaction also names ${b.symbol}`);
  return found.signature;
}

beforeAll(async () => {
  server = await startServer();
  protocols = createProtocols(server.baseUrl);
  // The chain's own account of each token's history, over its JSON-RPC port.
  const rpc = createSolanaRpc(server.localChain?.url as string);
  for (const token of [sol, usdc, bonk]) {
    const list = await rpc.getSignaturesForAddress(address(token.mint), { limit: 1000 }).send();
    expect(list.length, `${token.symbol}'s seeded history`).toBeGreaterThanOrEqual(150);
    histories.set(
      token.mint,
      list.map((e) => ({ signature: e.signature, blockTime: Number(e.blockTime) })),
    );
  }
});

afterAll(async () => {
  for (const p of protocols ?? []) p.close();
  await server?.close();
});

describe.each(createProtocols("http://127.0.0.1:1").map((p) => p.name))("TokenService over %s", (name) => {
  const protocol = () => {
    const p = protocols.find((x) => x.name === name);
    if (p === undefined) throw new Error(name);
    return p;
  };

  it.each(cases)("$name", async ({ method, request, expect: check }) => {
    check(await protocol().call(TokenService, method, typeof request === "function" ? request() : request));
  });

  it("walks a token's whole history with the before cursor, with no gap and no duplicate", async () => {
    for (const token of [sol, bonk]) {
      const seen: string[] = [];
      let before = "";
      for (;;) {
        const outcome = await protocol().call(TokenService, "GetTokenTransactions", {
          mint: token.mint,
          limit: 37,
          before,
        });
        if (!outcome.ok) throw new Error(outcome.message);
        const page = outcome.json.data as { signature: string; blockTime: number }[];
        if (page.length === 0) break;
        seen.push(...page.map((t) => t.signature));
        before = page.at(-1)?.signature as string;
      }
      expect(seen).toEqual(history(token).map((t) => t.signature));
      expect(new Set(seen).size).toBe(seen.length);
    }
  });
});

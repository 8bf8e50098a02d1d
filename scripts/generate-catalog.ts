/**
 * Writes the embedded token catalog (`src/token/catalog.json`) that the service serves by default,
 * so that it needs no network at runtime. Token facts (mints, symbols, decimals) are the real
 * Solana mainnet ones; prices are a fixed snapshot and transactions are synthetic.
 *
 * Everything is derived from a fixed seed and a fixed reference time, never from the clock or
 * Math.random, so running the script twice gives byte-identical output and a test can check that
 * the committed file is what this script produces.
 *
 * Usage: node scripts/generate-catalog.ts [output-path]   (default: src/token/catalog.json)
 */
import { writeFileSync } from "node:fs";
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { base58Encode, isAddress, isBase58OfSize } from "../src/domain/base58.ts";
import type { Catalog, CatalogToken } from "../src/token/catalog-token-source.ts";
import type { TokenTransaction } from "../src/token/token-source.ts";

const SEED = 20261101;
const AS_OF = "2026-11-01T00:00:00.000Z";
const HISTORY_SECONDS = 30 * 24 * 60 * 60;
const TRANSACTIONS_PER_TOKEN = 320;
const WALLET_POOL_SIZE = 40;

interface TokenSpec {
  readonly mint: string;
  readonly symbol: string;
  readonly name: string;
  readonly decimals: number;
  readonly tags: readonly string[];
  readonly price: number;
  readonly change24h: number;
}

// The order here is the catalog order, which listPrices keeps. One row per token reads best as a table.
// biome-ignore format: a table
const TOKENS: readonly TokenSpec[] = [
  //  mint                                           symbol     name                     decimals tags                                               price       change24h
  t("So11111111111111111111111111111111111111112",  "SOL",     "Wrapped SOL",             9, ["native", "verified"],                          142.37,     2.41),
  t("EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v", "USDC",    "USD Coin",                6, ["stablecoin", "verified"],                      1,          0.01),
  t("Es9vMFrzaCERmJfrF4H2FYD4KCoNkY11McCe8BenwNYB", "USDT",    "USDT",                    6, ["stablecoin", "verified"],                      1,         -0.02),
  t("JUPyiwrYJFskUPiHa7hkeR8VUtAeFoSYbKedZNsDvCN",  "JUP",     "Jupiter",                 6, ["defi", "governance", "verified"],              0.8734,    -1.87),
  t("DezXAZ8z7PnrnRJjz3wXBoRgixCa6xjnB7YaB1pPB263", "BONK",    "Bonk",                    5, ["meme", "verified"],                            0.00002156, 5.63),
  t("EKpQGSJtjMFqKZ9KQanSqYXRcF8fBopzLHYxdM65zcjm", "WIF",     "dogwifhat",               6, ["meme", "verified"],                            1.874,     -3.12),
  t("HZ1JovNiVvGrGNiiYvEozEVgZ58xaU3RKwX8eACQBCt3", "PYTH",    "Pyth Network",            6, ["oracle", "verified"],                          0.3124,     0.87),
  t("4k3Dyjzvzp8eMZWUXbBCjEvwSkkk59S5iCNLY3QrkX6R", "RAY",     "Raydium",                 6, ["defi", "verified"],                            2.462,      1.35),
  t("mSoLzYCxHdYgdzU16g5QSh3i5K3z3KZK7ytfqcJm7So",  "mSOL",    "Marinade staked SOL",     9, ["liquid-staking", "verified"],                  176.12,     2.38),
  t("J1toso1uCk3RLmjorhTtrVwY9HJ7X8V9yYac6Y7kGCPn", "JitoSOL", "Jito Staked SOL",         9, ["liquid-staking", "verified"],                  171.48,     2.44),
  t("orcaEKTdK7LKz57vaAYr9QeNsVEPfiu6QeMU1kektZE",  "ORCA",    "Orca",                    6, ["defi", "verified"],                            2.137,     -0.64),
  t("jtojtomepa8beP8AuQc6eXt5FriJwfFMwQx2v2f9mCL",  "JTO",     "Jito",                    9, ["governance", "verified"],                      2.308,     -2.05),
  t("bSo13r4TkiE4KumL71LsHTPpL2euBYLFx6h9HP3piy1",  "bSOL",    "BlazeStake Staked SOL",   9, ["liquid-staking", "verified"],                  165.93,     2.29),
  t("rndrizKT3MK1iimdxRdWabcF7Zg7AR5T4nud4EkHBof",  "RENDER",  "Render Token",            8, ["infrastructure", "verified"],                  4.118,      4.27),
  t("85VBFQZC9TZkfaptBWjvUw7YbZjy52A6mjtPGjstQAmQ", "W",       "Wormhole",                6, ["infrastructure", "governance", "verified"],    0.2435,    -1.16),
  t("7GCihgDB8fe6KNjn2MYtkzZcRjQy3t9GHdC8uHYmW2hr", "POPCAT",  "Popcat",                  9, ["meme", "verified"],                            0.6821,     7.94),
];

function t(
  mint: string,
  symbol: string,
  name: string,
  decimals: number,
  tags: readonly string[],
  price: number,
  change24h: number,
): TokenSpec {
  return { mint, symbol, name, decimals, tags, price, change24h };
}

/** mulberry32: a tiny, well-mixed 32-bit PRNG; the exact algorithm is part of the output format. */
function mulberry32(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let x = state;
    x = Math.imul(x ^ (x >>> 15), x | 1);
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

function assert(condition: boolean, message: string): asserts condition {
  if (!condition) throw new Error(`generate-catalog: ${message}`);
}

function generate(): Catalog {
  const random = mulberry32(SEED);
  const int = (n: number): number => Math.floor(random() * n);
  const bytes = (n: number): Uint8Array => Uint8Array.from({ length: n }, () => int(256));

  // A shared pool, so that the same wallets show up across transactions and tokens, as on chain.
  const wallets = Array.from({ length: WALLET_POOL_SIZE }, () => base58Encode(bytes(32)));
  const asOfSeconds = Date.parse(AS_OF) / 1000;
  const seenSignatures = new Set<string>();
  const symbols = new Set<string>();

  const tokens = TOKENS.map((spec): CatalogToken => {
    assert(isAddress(spec.mint), `${spec.symbol} mint ${spec.mint} is not base58 of 32 bytes`);
    assert(!symbols.has(spec.symbol.toLowerCase()), `duplicate symbol ${spec.symbol}`);
    symbols.add(spec.symbol.toLowerCase());

    const stakeable = spec.tags.includes("native") || spec.tags.includes("liquid-staking");
    // Amounts go through integer units so that JSON shows at most this many decimals.
    const scale = 10 ** Math.min(spec.decimals, 6);
    const transactions: TokenTransaction[] = [];
    while (transactions.length < TRANSACTIONS_PER_TOKEN) {
      const blockTime = asOfSeconds - 1 - int(HISTORY_SECONDS);
      // Several transactions in one block happen on chain; they make the signature tie-break matter.
      const roll = random();
      const group = roll < 0.8 ? 1 : roll < 0.93 ? 2 : 3 + int(3);
      for (let g = 0; g < group && transactions.length < TRANSACTIONS_PER_TOKEN; g++) {
        const signature = base58Encode(bytes(64));
        assert(isBase58OfSize(signature, 64), "signature is not base58 of 64 bytes");
        assert(!seenSignatures.has(signature), "duplicate signature");
        seenSignatures.add(signature);

        // Log-uniform value between $1 and $50k, converted to token units.
        const usd = Math.exp(random() * Math.log(50_000));
        const amount = Math.max(1, Math.round((usd / spec.price) * scale)) / scale;

        const from = int(wallets.length);
        const to = (from + 1 + int(wallets.length - 1)) % wallets.length;
        const sender = wallets[from] as string;
        const recipient = wallets[to] as string;

        const kind = random();
        const type =
          kind < 0.6
            ? "transfer"
            : kind < 0.8
              ? "swap"
              : kind < 0.86
                ? "mint"
                : kind < 0.92 || !stakeable
                  ? "burn"
                  : "stake";
        transactions.push({ signature, blockTime, amount, sender, recipient, type });
      }
    }
    // The service order: blockTime descending, ties broken by signature ascending with plain `<`
    // (code-unit order, not localeCompare), so that paging with a `before` cursor is well defined.
    transactions.sort((a, b) =>
      a.blockTime !== b.blockTime ? b.blockTime - a.blockTime : a.signature < b.signature ? -1 : 1,
    );

    return {
      mint: spec.mint,
      symbol: spec.symbol,
      name: spec.name,
      decimals: spec.decimals,
      logoURI: `https://raw.githubusercontent.com/solana-labs/token-list/main/assets/mainnet/${spec.mint}/logo.png`,
      tags: spec.tags,
      price: spec.price,
      change24h: spec.change24h,
      transactions,
    };
  });

  return { generatedBy: "scripts/generate-catalog.ts", seed: SEED, asOf: AS_OF, tokens };
}

const defaultOutput = fileURLToPath(new URL("../src/token/catalog.json", import.meta.url));
const output = process.argv[2] === undefined ? defaultOutput : resolve(process.argv[2]);
const text = `${JSON.stringify(generate())}\n`;
writeFileSync(output, text);
console.log(`wrote ${output} (${text.length} bytes)`);

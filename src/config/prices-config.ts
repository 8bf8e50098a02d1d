import { isAddress } from "@solana/addresses";
import { catalogSymbolLookup, loadCatalog } from "../token/catalog.ts";
import type { ConfigReader } from "./config-reader.ts";
import { isHttpUrl } from "./config-urls.ts";

/** Where prices and the token list come from, and how long a price may be served. */
export interface PricesConfig {
  /** JUPITER_API_URL: Jupiter's base URL (Price API v3, Tokens API v2); undefined: the catalog. */
  readonly jupiterUrl: string | undefined;
  /** Sent as `x-api-key`; never logged. */
  readonly jupiterApiKey: string | undefined;
  /** Mints listed when GetTokenPrices has no filter; undefined: the catalog's tokens. */
  readonly watchlist: readonly string[] | undefined;
  /** A price is fresh this long; after it, it is served while one request revalidates it. */
  readonly ttlMs: number;
  /** Oldest price served while the source fails; past it, callers get unavailable. */
  readonly maxStaleMs: number;
  /** The token list (names, symbols, logos, tags) is refreshed this often, in the background. */
  readonly tokenListTtlMs: number;
  /** Bound on one Jupiter request, answer included. */
  readonly timeoutMs: number;
  /** Jupiter requests in flight at once; more wait, up to `maxQueued`, then fail fast. */
  readonly maxConcurrency: number;
  readonly maxQueued: number;
  /** Largest Price API or token search answer read, in bytes. */
  readonly maxResponseBytes: number;
  /** Largest verified token list read, in bytes (it holds thousands of tokens). */
  readonly maxTokenListBytes: number;
  /** Mints whose prices (and token list entries) are kept in memory. */
  readonly cacheEntries: number;
  /** Consecutive failed Jupiter calls that open its circuit, and how long it stays open. */
  readonly breakerFailures: number;
  readonly breakerOpenMs: number;
  /** The catalog's prices take a random-walk step this often (0: they stay the snapshot's). */
  readonly catalogTickMs: number;
  /** One poll of the price source per this interval serves every price watcher of the process. */
  readonly watchIntervalMs: number;
  /** PYTH_HERMES_URL: a Pyth Hermes base URL (trigger orders' second source); undefined: no Pyth. */
  readonly pythHermesUrl: string | undefined;
  /** PYTH_PRICE_FEEDS: the Pyth feed of each catalog token it prices (none built in). */
  readonly pythFeeds: readonly PythFeedConfig[];
}

export interface PythFeedConfig {
  /** The catalog's spelling of the token's symbol. */
  readonly symbol: string;
  /** 64 lowercase hex digits, without 0x (as Hermes answers it). */
  readonly feedId: string;
}

/** Mints a watchlist may hold: GetTokenPrices answers them all in one call. */
const MAX_WATCHLIST = 500;

export function readPrices(reader: ConfigReader): PricesConfig {
  const { read, int, problems } = reader;
  const url = read("JUPITER_API_URL").replace(/\/+$/, "");
  if (url !== "" && !isHttpUrl(url)) problems.push("JUPITER_API_URL must be an http:// or https:// URL");
  const key = read("JUPITER_API_KEY");
  if (/[\s\p{Cc}]/u.test(key)) problems.push("JUPITER_API_KEY must not contain spaces or control characters");
  const listed = read("PRICE_WATCHLIST");
  let watchlist: string[] | undefined;
  if (listed !== "") {
    watchlist = [...new Set(listed.split(",").map((m) => m.trim()))];
    const bad = watchlist.filter((m) => !isAddress(m));
    if (bad.length > 0) {
      problems.push(
        `PRICE_WATCHLIST must be a comma-separated list of mint addresses (base58, 32 bytes); not one: "${bad[0]}"`,
      );
    } else if (watchlist.length > MAX_WATCHLIST) {
      problems.push(`PRICE_WATCHLIST must hold at most ${MAX_WATCHLIST} mints (got ${watchlist.length})`);
    }
  }
  const ttlMs = int("PRICE_TTL_MS", 1, 3_600_000);
  const maxStaleMs = int("PRICE_MAX_STALE_MS", 0, 86_400_000);
  if (maxStaleMs < ttlMs) problems.push("PRICE_MAX_STALE_MS must be at least PRICE_TTL_MS");
  return {
    jupiterUrl: url === "" ? undefined : url,
    jupiterApiKey: key === "" ? undefined : key,
    watchlist,
    ttlMs,
    maxStaleMs,
    tokenListTtlMs: int("TOKEN_LIST_TTL_MS", 1000, 7 * 86_400_000),
    timeoutMs: int("JUPITER_TIMEOUT_MS", 10, 600_000),
    maxConcurrency: int("JUPITER_MAX_CONCURRENCY", 1, 1000),
    maxQueued: int("JUPITER_MAX_QUEUED", 0, 100_000),
    maxResponseBytes: int("JUPITER_MAX_RESPONSE_BYTES", 1024, 1024 * 1024 * 1024),
    maxTokenListBytes: int("JUPITER_MAX_TOKEN_LIST_BYTES", 1024, 1024 * 1024 * 1024),
    cacheEntries: int("PRICE_CACHE_ENTRIES", 100, 10_000_000),
    breakerFailures: int("JUPITER_BREAKER_FAILURES", 1, 1000),
    breakerOpenMs: int("JUPITER_BREAKER_OPEN_MS", 10, 3_600_000),
    catalogTickMs: int("CATALOG_PRICE_TICK_MS", 0, 86_400_000),
    watchIntervalMs: int("PRICE_WATCH_INTERVAL_MS", 10, 3_600_000),
    pythHermesUrl: readPythUrl(read("PYTH_HERMES_URL"), problems),
    pythFeeds: readPythFeeds(read("PYTH_PRICE_FEEDS"), problems),
  };
}

/** The URL without trailing slashes; its text is never echoed (a provider's token may be in its path). */
function readPythUrl(text: string, problems: string[]): string | undefined {
  const url = text.replace(/\/+$/, "");
  if (url === "") return undefined;
  if (!isHttpUrl(url)) {
    problems.push("PYTH_HERMES_URL must be an http:// or https:// URL");
  } else {
    const { username, password, search, hash } = new URL(url);
    // fetch refuses a URL with credentials; the service appends its own path and query.
    if (username !== "" || password !== "" || search !== "" || hash !== "")
      problems.push("PYTH_HERMES_URL must not carry user info, a query or a fragment");
  }
  return url;
}

/** `SYMBOL:feedId,…`: catalog symbols, each once, and Pyth feed ids (64 hex digits, 0x optional). */
function readPythFeeds(text: string, problems: string[]): PythFeedConfig[] {
  if (text === "") return [];
  const canonical = catalogSymbolLookup(loadCatalog());
  const feeds: PythFeedConfig[] = [];
  for (const entry of text.split(",").map((e) => e.trim())) {
    const match = /^([^:\s]+):(?:0x)?([0-9a-fA-F]{64})$/.exec(entry);
    if (match === null) {
      problems.push(
        `PYTH_PRICE_FEEDS must be a comma-separated list of SYMBOL:feedId (a catalog symbol, then a Pyth price feed id of 64 hex digits, 0x optional); not one: "${entry.slice(0, 80)}"`,
      );
      return [];
    }
    const [, named = "", id = ""] = match;
    const symbol = canonical(named);
    if (symbol === undefined) {
      problems.push(`PYTH_PRICE_FEEDS names ${named.slice(0, 32)}, which is not a catalog token`);
      return [];
    }
    if (feeds.some((f) => f.symbol === symbol)) {
      problems.push(`PYTH_PRICE_FEEDS names ${symbol} more than once`);
      return [];
    }
    feeds.push({ symbol, feedId: id.toLowerCase() });
  }
  return feeds;
}

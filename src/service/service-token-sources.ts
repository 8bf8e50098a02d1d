import { type Config, redactRpcUrl } from "../config.ts";
import type { EmbeddedLocalChain } from "../local-chain/index.ts";
import type { Logger } from "../logger.ts";
import { createRateLimitedLog } from "../observability/rate-limited-log.ts";
import type { UpstreamMetrics } from "../observability/upstream-metrics.ts";
import type { Catalog } from "../token/catalog.ts";
import { createCatalogPriceSource } from "../token/catalog-price-source.ts";
import { createCatalogTokenList } from "../token/catalog-token-list.ts";
import { createJupiterApi } from "../token/jupiter-api.ts";
import { createJupiterPriceSource } from "../token/jupiter-price-source.ts";
import { createJupiterSwapApi } from "../token/jupiter-swap-api.ts";
import { createJupiterTokenList } from "../token/jupiter-token-list.ts";
import { createPythHermesPriceSource } from "../token/pyth-hermes-price-source.ts";
import { jupiterRouteNotice, localRouteNotice, type SwapRouteNotice } from "../token/swap-route-notice.ts";
import type { PriceSource, TokenList } from "../token/token-source.ts";
import { createJsonUpstream } from "../upstream/json-upstream.ts";

/**
 * Where swap runs get their routes: Jupiter's Swap API at JUPITER_SWAP_URL, or, on the embedded
 * chain with JUPITER_SWAP_URL unset, the chain's local pools served in-process (never against a
 * cluster). Either way the executor gets the same port and the same checked answers.
 */
export async function createSwapRoutes(
  config: Config,
  logger: Logger,
  catalog: Catalog,
  localChain: EmbeddedLocalChain | undefined,
  upstreamMetrics: UpstreamMetrics,
): Promise<SwapRouteNotice> {
  if (config.swaps.localRoutes === true && localChain !== undefined) {
    const { createLocalSwapApi, localPools } = await import("../local-chain/index.ts");
    const pools = await localPools(catalog, localChain.keys);
    logger.info(
      { pools: pools.length },
      "swap routes come from local pools on the embedded development chain, not Jupiter (set JUPITER_SWAP_URL to use a Swap API)",
    );
    return localRouteNotice(createLocalSwapApi({ transport: localChain.transport, pools }));
  }
  const api = createJupiterSwapApi({
    baseUrl: config.swaps.jupiterSwapUrl,
    ...(config.prices.jupiterApiKey === undefined ? {} : { apiKey: config.prices.jupiterApiKey }),
    timeoutMs: config.swaps.timeoutMs,
    maxBytes: config.swaps.maxResponseBytes,
    maxConcurrency: config.swaps.maxConcurrency,
    maxQueued: config.swaps.maxQueued,
    onCall: upstreamMetrics.onCall("jupiter_swap"),
    onCircuit: upstreamMetrics.onCircuit("jupiter_swap"),
  });
  return jupiterRouteNotice(api, config.swaps.jupiterSwapUrl);
}

/** How long a 429 without Retry-After leaves Jupiter alone. */
const JUPITER_DEFAULT_RETRY_AFTER_MS = 1000;

/**
 * Prices and the token list: Jupiter's when JUPITER_API_URL is set (one HTTP upstream, its
 * failures counted and logged at most a few lines a second), else the embedded catalog's, whose
 * prices of pooled tokens come from the embedded chain's pools when this process runs that chain
 * (and CATALOG_PRICE_TICK_MS does not ask for the catalog's random walk instead).
 */
export async function createPriceSources(
  config: Config,
  logger: Logger,
  catalog: Catalog,
  metrics: UpstreamMetrics,
  localChain: EmbeddedLocalChain | undefined,
): Promise<{ prices: PriceSource; tokenList: TokenList }> {
  const settings = config.prices;
  const watchlist = settings.watchlist ?? catalog.tokens.map((t) => t.mint);
  if (settings.jupiterUrl === undefined) {
    const fromCatalog = createCatalogPriceSource({ catalog, watchlist, tickMs: settings.catalogTickMs });
    const tokenList = createCatalogTokenList({ catalog });
    if (localChain === undefined || settings.catalogTickMs > 0) return { prices: fromCatalog, tokenList };
    const { chainPoolPricing, createEmbeddedPoolPriceSource } = await import("../local-chain/index.ts");
    const prices = createEmbeddedPoolPriceSource({
      transport: localChain.transport,
      pricing: await chainPoolPricing(catalog, localChain.keys),
      fallback: fromCatalog,
      catalog,
      // A pool can move in any slot: read once a slot at most, never less often than PRICE_TTL_MS.
      ttlMs: Math.min(settings.ttlMs, config.solana.local.slotMs),
      maxStaleMs: settings.maxStaleMs,
      onLookup: metrics.onLookup("price"),
    });
    logger.info(
      "prices of pooled tokens come from the embedded chain's local pools (their mid price); the rest from the catalog",
    );
    return { prices, tokenList };
  }
  const failureLog = createRateLimitedLog({ logger, level: "warn", perSecond: 2 });
  const counted = metrics.onCall("jupiter");
  const upstream = createJsonUpstream({
    name: "Jupiter",
    baseUrl: settings.jupiterUrl,
    headers: settings.jupiterApiKey === undefined ? {} : { "x-api-key": settings.jupiterApiKey },
    timeoutMs: settings.timeoutMs,
    maxConcurrency: settings.maxConcurrency,
    maxQueued: settings.maxQueued,
    breaker: { failures: settings.breakerFailures, openMs: settings.breakerOpenMs },
    defaultRetryAfterMs: JUPITER_DEFAULT_RETRY_AFTER_MS,
    onCall(endpoint, outcome, seconds) {
      counted(endpoint, outcome, seconds);
      if (outcome !== "ok")
        failureLog({ upstream: "jupiter", endpoint, outcome }, "a Jupiter request failed");
    },
    onCircuit(position) {
      metrics.onCircuit("jupiter")(position);
      logger.warn(
        { upstream: "jupiter", circuit: position },
        `Jupiter's circuit breaker is ${position.replace("_", "-")}`,
      );
    },
  });
  const api = createJupiterApi({
    upstream,
    maxResponseBytes: settings.maxResponseBytes,
    maxTokenListBytes: settings.maxTokenListBytes,
  });
  const tokenList = createJupiterTokenList({
    api,
    ttlMs: settings.tokenListTtlMs,
    max: settings.cacheEntries,
    onLookup: metrics.onLookup("token_list"),
  });
  const prices = createJupiterPriceSource({
    api,
    tokenList,
    fallbackSymbols: new Map(catalog.tokens.map((t) => [t.mint, t.symbol])),
    watchlist,
    ttlMs: settings.ttlMs,
    maxStaleMs: settings.maxStaleMs,
    max: settings.cacheEntries,
    onLookup: metrics.onLookup("price"),
  });
  logger.info(
    { jupiter: redactRpcUrl(settings.jupiterUrl), watchlist: watchlist.length },
    "prices and the token list come from Jupiter at JUPITER_API_URL",
  );
  return { prices, tokenList };
}

/** Pyth Hermes' bounds: fixed, not settings (only PYTH_HERMES_URL and PYTH_PRICE_FEEDS are). */
const PYTH_TIMEOUT_MS = 3000;
/** The answer carries the binary update too (base64), a few hundred bytes a feed. */
const PYTH_MAX_RESPONSE_BYTES = 512 * 1024;
const PYTH_MAX_CONCURRENCY = 4;
const PYTH_MAX_QUEUED = 16;
const PYTH_BREAKER = { failures: 5, openMs: 10_000 };
/** Hermes' public instance leaves a client past its rate limit alone for 60 s. */
const PYTH_DEFAULT_RETRY_AFTER_MS = 60_000;

/**
 * Pyth's prices from Hermes at PYTH_HERMES_URL, for the tokens PYTH_PRICE_FEEDS names (a second
 * source of trigger orders' reference price); undefined without PYTH_HERMES_URL. Its calls are
 * counted as the `pyth` upstream, its failures logged a few lines a second at most, and only the
 * URL's origin is ever logged (a provider's token may be in its path).
 */
export function createPythPrices(
  config: Config,
  logger: Logger,
  catalog: Catalog,
  metrics: UpstreamMetrics,
): PriceSource | undefined {
  const { pythHermesUrl, pythFeeds } = config.prices;
  if (pythHermesUrl === undefined) return undefined;
  const failureLog = createRateLimitedLog({ logger, level: "warn", perSecond: 2 });
  const counted = metrics.onCall("pyth");
  const upstream = createJsonUpstream({
    name: "Pyth Hermes",
    baseUrl: pythHermesUrl,
    timeoutMs: PYTH_TIMEOUT_MS,
    maxConcurrency: PYTH_MAX_CONCURRENCY,
    maxQueued: PYTH_MAX_QUEUED,
    breaker: PYTH_BREAKER,
    defaultRetryAfterMs: PYTH_DEFAULT_RETRY_AFTER_MS,
    onCall(endpoint, outcome, seconds) {
      counted(endpoint, outcome, seconds);
      if (outcome !== "ok")
        failureLog({ upstream: "pyth", endpoint, outcome }, "a Pyth Hermes request failed");
    },
    onCircuit(position) {
      metrics.onCircuit("pyth")(position);
      logger.warn(
        { upstream: "pyth", circuit: position },
        `Pyth Hermes' circuit breaker is ${position.replace("_", "-")}`,
      );
    },
  });
  const mints = new Map(catalog.tokens.map((t) => [t.symbol, t.mint]));
  const feeds = pythFeeds.flatMap(({ symbol, feedId }) => {
    const mint = mints.get(symbol);
    return mint === undefined ? [] : [{ mint, symbol, feedId }];
  });
  logger.info(
    { pyth: redactRpcUrl(pythHermesUrl), feeds: feeds.map((f) => f.symbol) },
    "Pyth prices come from Hermes at PYTH_HERMES_URL",
  );
  return createPythHermesPriceSource({ upstream, feeds, maxResponseBytes: PYTH_MAX_RESPONSE_BYTES });
}

import { type SwapApi, SwapApiUnavailableError } from "./jupiter-swap-api.ts";

/**
 * Where swap routes come from, said to owners (Agent.notice) and in run failures: a swap agent
 * whose runs cannot get a route should say so, and name what to set, before it fails, not after.
 */
export interface SwapRouteNotice {
  /** The route port, whose unavailable failures name JUPITER_SWAP_URL and its origin. */
  readonly api: SwapApi;
  /** The owner-facing notice of the moment. */
  notice(): string;
  /** Finds out, once, whether the Swap API answers at all (any HTTP answer will do). */
  probe(): Promise<void>;
}

/** Outcomes that mean the Swap API cannot be reached, not that it refused one request. */
const UNREACHABLE = new Set(["unreachable", "timeout", "circuit_open"]);
const PROBE_TIMEOUT_MS = 3_000;

/** Jupiter's Swap API at JUPITER_SWAP_URL: its failures and the notice name the variable and origin. */
export function jupiterRouteNotice(
  api: SwapApi,
  baseUrl: string,
  options: { fetch?: typeof fetch } = {},
): SwapRouteNotice {
  const origin = new URL(baseUrl).origin;
  let unreachable = false;
  const hint = `JUPITER_SWAP_URL is ${origin}; set it to a Swap API this service can reach`;
  return {
    api: {
      ...(api.maxCalls === undefined ? {} : { maxCalls: api.maxCalls }),
      async build(request) {
        try {
          const route = await api.build(request);
          unreachable = false;
          return route;
        } catch (error) {
          if (!(error instanceof SwapApiUnavailableError)) throw error;
          if (UNREACHABLE.has(error.reason)) unreachable = true;
          throw new SwapApiUnavailableError(error.reason, `${error.message} (${hint})`, {
            cause: error,
            ...(error.retryAfterMs === undefined ? {} : { retryAfterMs: error.retryAfterMs }),
          });
        }
      },
    },
    notice: () =>
      unreachable
        ? `no Swap API can be reached at ${origin} (JUPITER_SWAP_URL): swap runs fail, and the agent becomes failed after repeated failures, until JUPITER_SWAP_URL names a Swap API this service can reach`
        : `swap routes come from the Swap API at ${origin} (JUPITER_SWAP_URL)`,
    async probe() {
      try {
        await (options.fetch ?? fetch)(`${origin}/`, {
          method: "HEAD",
          signal: AbortSignal.timeout(PROBE_TIMEOUT_MS),
        });
      } catch {
        unreachable = true;
      }
    },
  };
}

/** The embedded chain's local pools: always reachable, and never to be mistaken for Jupiter. */
export function localRouteNotice(api: SwapApi): SwapRouteNotice {
  return {
    api,
    notice: () =>
      "swap routes come from local pools on the embedded development chain, not Jupiter: each catalog token is paired with USDC and with SOL at the catalog's fixed prices (set JUPITER_SWAP_URL to route through a Swap API instead)",
    probe: async () => {},
  };
}

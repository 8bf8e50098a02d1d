import type { LocalChainConfig } from "../config.ts";

/**
 * The chain's options as the configuration gives them, the same for the service's embedded chain
 * (in its worker) and `npm run local-chain`: one list, so that a new setting reaches both.
 */
export function chainOptionsOf(local: LocalChainConfig) {
  return {
    port: local.port,
    statePath: local.statePath,
    slotMs: local.slotMs,
    limits: local.limits,
    pubsubLimits: local.pubsub,
    cheatcodes: local.cheatcodes,
    history: local.history,
    maxAccountBytes: local.maxAccountBytes,
    airdropLimit: local.airdropLimit,
    allowedHosts: local.allowedHosts,
    allowedOrigins: local.allowedOrigins,
  };
}

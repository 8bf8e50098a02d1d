import { Counter, type Registry } from "prom-client";
import { SWAP_REFUSALS, type SwapRefusal } from "../chain/swap-refusals.ts";

/**
 * `swap_routes_refused_total{reason}`: swap routes refused before signing, by why (a program off
 * the allow-list, the System program, an instruction that names the executor or the delegate or
 * hands authority away, a foreign signer, a close of anything but the taker's account, an
 * associated account operation, a lookup table not on chain, a simulated end state that is not
 * exactly the swap, a quote or minimum out outside the agent's band, a price too far below the
 * price source's). A rise means the Swap API is
 * answering something the service will not sign: an alert, not a retry loop to wait out.
 */
export function registerSwapMetrics(registry: Registry): (reason: SwapRefusal) => void {
  const refused = new Counter({
    name: "swap_routes_refused_total",
    help: "Swap routes the executor refused before signing, by reason.",
    labelNames: ["reason"] as const,
    registers: [registry],
  });
  for (const reason of SWAP_REFUSALS) refused.inc({ reason }, 0);
  return (reason) => refused.inc({ reason });
}

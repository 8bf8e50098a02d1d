/**
 * Why a swap route was refused before signing (a metric label each). Apart from swap-route.ts,
 * which brings @solana/kit, so that the metrics can name them in a process that swaps nothing.
 */
export const SWAP_REFUSALS = [
  "program",
  "system",
  "authority",
  "signer",
  "close",
  "account_op",
  "lookup_table",
  "simulation",
  "quote",
  "minimum_out",
  "price",
] as const;
export type SwapRefusal = (typeof SWAP_REFUSALS)[number];

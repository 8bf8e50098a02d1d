import type { RawAccount } from "./token-accounts.ts";

/**
 * An account as the chain reads it: `rentEpoch` only where a cheatcode set one (else u64::MAX).
 * Here rather than in local-chain.ts, so that the chain and its JSON-RPC encoding
 * (../encoding/account-encoding.ts) both import it and neither imports the other.
 */
export type ChainAccount = RawAccount & { readonly rentEpoch?: bigint };

/** rentEpoch of every rent-exempt account, as validators report it since rent collection ended. */
export const RENT_EXEMPT_EPOCH = (1n << 64n) - 1n;

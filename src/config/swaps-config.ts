import { isAddress } from "@solana/addresses";
import type { ConfigReader } from "./config-reader.ts";
import { isHttpUrl } from "./config-urls.ts";

/** Where swap agents' routes come from, and what a route may touch before it is signed. */
export interface SwapsConfig {
  /** JUPITER_SWAP_URL: Jupiter's Swap API v2 base (GET {url}/build). */
  readonly jupiterSwapUrl: string;
  /**
   * JUPITER_SWAP_URL unset on the embedded chain (no SOLANA_RPC_URL): routes come from the local
   * pools on that development chain, in-process, not from Jupiter. Never against a cluster.
   */
  readonly localRoutes?: boolean;
  /** Bound on one build request, answer included. */
  readonly timeoutMs: number;
  /** Largest build answer read, in bytes. */
  readonly maxResponseBytes: number;
  /** Build requests in flight at once; more wait, up to `maxQueued`, then fail fast (retried). */
  readonly maxConcurrency: number;
  readonly maxQueued: number;
  /**
   * Programs a swap transaction may call: any other in an upstream answer fails the run before
   * anything is signed.
   */
  readonly allowedPrograms: readonly string[];
  /** SWAP_MAX_FEE_LAMPORTS: the most a run's compute unit price × unit limit may cost. */
  readonly maxFeeLamports: bigint;
  /** SWAP_MAX_PRICE_DEVIATION_BPS: how much worse than the price source's price a quote may be. */
  readonly maxPriceDeviationBps: number;
}

/**
 * Jupiter v6, the token programs and the associated token program. The System and Compute Budget
 * programs are never a route's to call (the service creates accounts and sets the budget itself),
 * listed or not.
 */
export const DEFAULT_SWAP_PROGRAMS = [
  "JUP6LkbZbjS1jKKwapdHNy74zcZ3tLUZoi5QNyVTaV4",
  "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA",
  "TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb",
  "ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL",
] as const;

/** Programs SWAP_ALLOWED_PROGRAMS may name: a transaction calls a few dozen at most. */
const MAX_SWAP_PROGRAMS = 64;

/** Jupiter's Swap API, for JUPITER_SWAP_URL unset against a cluster. */
export const JUPITER_SWAP_DEFAULT_URL = "https://api.jup.ag/swap/v2";

export function readSwaps(reader: ConfigReader): SwapsConfig {
  const { read, int, problems } = reader;
  const given = read("JUPITER_SWAP_URL").replace(/\/+$/, "");
  const localRoutes = given === "" && read("SOLANA_RPC_URL") === "";
  const url = given === "" ? JUPITER_SWAP_DEFAULT_URL : given;
  if (!isHttpUrl(url)) problems.push("JUPITER_SWAP_URL must be an http:// or https:// URL");
  const listed = read("SWAP_ALLOWED_PROGRAMS");
  const programs = [
    ...new Set(
      (listed === "" ? DEFAULT_SWAP_PROGRAMS.join(",") : listed)
        .split(",")
        .map((p) => p.trim())
        .filter((p) => p !== ""),
    ),
  ];
  const bad = programs.filter((p) => !isAddress(p));
  if (programs.length === 0) {
    problems.push("SWAP_ALLOWED_PROGRAMS must name at least one program (comma-separated addresses)");
  } else if (bad.length > 0) {
    problems.push(
      `SWAP_ALLOWED_PROGRAMS must be a comma-separated list of program addresses (base58, 32 bytes); not one: "${bad[0]?.slice(0, 60)}"`,
    );
  } else if (programs.length > MAX_SWAP_PROGRAMS) {
    problems.push(
      `SWAP_ALLOWED_PROGRAMS must name at most ${MAX_SWAP_PROGRAMS} programs (got ${programs.length})`,
    );
  }
  return {
    jupiterSwapUrl: url,
    localRoutes,
    timeoutMs: int("JUPITER_SWAP_TIMEOUT_MS", 10, 600_000),
    // A real answer is a few kilobytes (a transaction is at most 1,232 bytes, its tables a few more).
    maxResponseBytes: int("JUPITER_SWAP_MAX_RESPONSE_BYTES", 1024, 64 * 1024 * 1024),
    maxConcurrency: int("JUPITER_SWAP_MAX_CONCURRENCY", 1, 1000),
    maxQueued: int("JUPITER_SWAP_MAX_QUEUED", 0, 100_000),
    allowedPrograms: programs,
    // Up to 1 SOL: above it a single run's fee is no longer a bound worth the name.
    maxFeeLamports: BigInt(int("SWAP_MAX_FEE_LAMPORTS", 0, 1_000_000_000)),
    maxPriceDeviationBps: int("SWAP_MAX_PRICE_DEVIATION_BPS", 0, 10_000),
  };
}

import { getTransferCheckedInstructionDataEncoder } from "@solana-program/token";
import { isBase58Address } from "../../chain/base58-address.ts";

/**
 * A route source that answers Jupiter's Swap API v2 `GET /build` contract
 * (dev.jup.ag/docs/swap/build) from constant-product pools whose vaults are real token accounts on
 * a chain: the embedded development chain's pools (local-pools.ts), or a test's. It is not Jupiter
 * and routes through no market but these pools; its route label says so.
 *
 * The answer's instructions move real tokens when the caller's transaction lands, with the SPL
 * Token program alone (no System program, no account creation: the caller makes its accounts):
 *   - swapInstruction: the taker's `transferChecked` of `amount` from its own associated account
 *     of the input mint into the pool's input vault;
 *   - cleanupInstruction: the output vault's `transferChecked` of `outAmount` to
 *     `destinationTokenAccount`, signed by the taker as the vault's delegate. Before answering,
 *     the pool's side is authorized (`authorize`: the pool's key approves the taker for exactly the
 *     quoted amount), so the route is signed by the taker alone, whatever key the taker is.
 *
 * The query and answer are the wire's (URLSearchParams in, JSON out), so the same source serves
 * in-process (local-swap-api.ts) and over HTTP (the tests' Jupiter-shaped server).
 */

/** A pool as a route sees it: the address routePlan names (the vaults' owner) and its two vaults. */
export interface RoutePool {
  readonly address: string;
  readonly mintA: string;
  readonly mintB: string;
  readonly vaultA: string;
  readonly vaultB: string;
}

export interface RouteMint {
  /** The token program that owns the mint. */
  readonly program: string;
  readonly decimals: number;
}

export interface WireMeta {
  readonly pubkey: string;
  readonly isSigner: boolean;
  readonly isWritable: boolean;
}
export interface WireInstruction {
  readonly programId: string;
  readonly accounts: WireMeta[];
  readonly data: string;
}

/** A `/build` answer: HTTP status and JSON body, as Jupiter would send them. */
export interface RouteAnswer {
  readonly status: number;
  readonly body: unknown;
}

/** Whatever answers `/build` queries: the local pools in-process, or Jupiter over HTTP. */
export interface SwapRouteSource {
  build(query: URLSearchParams): Promise<RouteAnswer>;
}

/** The quote of one swap, and the accounts it moves. */
export interface RouteQuote {
  readonly pool: RoutePool;
  readonly inputVault: string;
  readonly outputVault: string;
  readonly outAmount: bigint;
  readonly feeAmount: bigint;
  readonly priceImpactPct: string;
}

export interface LocalSwapRoutesOptions {
  readonly pools: readonly RoutePool[];
  /** Token balances of vaults, read from the chain (undefined: no such account). */
  readVaults(vaults: readonly string[]): Promise<readonly (bigint | undefined)[]>;
  /** A mint's program and decimals, read from the chain (undefined: no such mint). */
  mintOf(mint: string): Promise<RouteMint | undefined>;
  /** The associated token account of `owner` for `mint` under `program`. */
  associatedAccount(owner: string, mint: string, program: string): Promise<string>;
  /** Lets `taker` move exactly `amount` out of the pool's `outputVault` (the pool's side of the swap). */
  authorize(
    pool: RoutePool,
    outputVault: string,
    outputMint: string,
    taker: string,
    amount: bigint,
  ): Promise<void>;
  /** The pools' fee, in basis points of the input (default 30). */
  readonly feeBps?: number;
  /** routePlan's label (default LOCAL_ROUTE_LABEL). */
  readonly label?: string;
  /** addressesByLookupTableAddress of every answer (default null: none). */
  readonly lookupTables?: Readonly<Record<string, readonly string[]>> | null;
  /** Of the pools for a pair, the one for this taker (default the first). */
  choosePool?(candidates: readonly RoutePool[], taker: string, destination: string): RoutePool;
}

/** What the routes' plan calls them: a local pool on a development chain, not Jupiter. */
export const LOCAL_ROUTE_LABEL = "Local dev-chain pool (not Jupiter)";
/** The compute unit price answers ask for, in micro-lamports. */
export const LOCAL_ROUTE_COMPUTE_UNIT_PRICE = 1_000n;
const COMPUTE_BUDGET = "ComputeBudget111111111111111111111111111111";
const ADDRESS_FIELDS = ["inputMint", "outputMint", "taker", "payer", "destinationTokenAccount"] as const;

export function createLocalSwapRoutes(options: LocalSwapRoutesOptions): SwapRouteSource & {
  quote(
    inputMint: string,
    outputMint: string,
    amount: bigint,
    taker: string,
  ): Promise<RouteQuote | undefined>;
} {
  const feeBps = BigInt(options.feeBps ?? 30);
  const label = options.label ?? LOCAL_ROUTE_LABEL;
  // One build per pool at a time: a pool's output vault has one delegate, so two answers made at
  // once would each authorize their taker and the later would undo the earlier before it is read.
  const busy = new Map<RoutePool, Promise<unknown>>();
  const serially = <T>(pool: RoutePool, work: () => Promise<T>): Promise<T> => {
    const next = (busy.get(pool) ?? Promise.resolve()).then(work, work);
    const settled = next.catch(() => undefined);
    busy.set(pool, settled);
    void settled.then(() => {
      if (busy.get(pool) === settled) busy.delete(pool);
    });
    return next;
  };

  const poolFor = (
    inputMint: string,
    outputMint: string,
    taker: string,
    destination: string,
  ): RoutePool | undefined => {
    const candidates = options.pools.filter(
      (p) =>
        (p.mintA === inputMint && p.mintB === outputMint) ||
        (p.mintB === inputMint && p.mintA === outputMint),
    );
    if (candidates.length === 0) return undefined;
    return options.choosePool?.(candidates, taker, destination) ?? candidates[0];
  };

  const quote = async (
    inputMint: string,
    outputMint: string,
    amount: bigint,
    taker: string,
    destination = "",
  ): Promise<RouteQuote | undefined> => {
    const pool = poolFor(inputMint, outputMint, taker, destination);
    if (pool === undefined) return undefined;
    const aToB = pool.mintA === inputMint;
    const inputVault = aToB ? pool.vaultA : pool.vaultB;
    const outputVault = aToB ? pool.vaultB : pool.vaultA;
    const [reserveIn = 0n, reserveOut = 0n] = await options.readVaults([inputVault, outputVault]);
    const found = constantProductQuote(reserveIn, reserveOut, amount, feeBps);
    return found === undefined ? undefined : { pool, inputVault, outputVault, ...found };
  };

  return {
    quote,
    async build(query) {
      for (const field of ADDRESS_FIELDS) {
        if (!isBase58Address(query.get(field) ?? "")) {
          return {
            status: 400,
            body: { error: `${field} is not a valid address`, errorCode: "INVALID_REQUEST" },
          };
        }
      }
      const amountText = query.get("amount") ?? "";
      const slippageBps = Number(query.get("slippageBps") ?? "50");
      if (
        !/^[1-9]\d{0,19}$/.test(amountText) ||
        BigInt(amountText) >= 2n ** 64n ||
        !Number.isInteger(slippageBps) ||
        slippageBps < 0 ||
        slippageBps > 10_000
      ) {
        return {
          status: 400,
          body: { error: "amount or slippageBps is invalid", errorCode: "INVALID_REQUEST" },
        };
      }
      const [inputMint, outputMint, taker, , destination] = ADDRESS_FIELDS.map(
        (f) => query.get(f) as string,
      ) as [string, string, string, string, string];
      const amount = BigInt(amountText);
      const pool = poolFor(inputMint, outputMint, taker, destination);
      if (pool === undefined) return noRoute();
      return serially(pool, async () => {
        const found = await quote(inputMint, outputMint, amount, taker, destination);
        const [inMint, outMint] = await Promise.all([options.mintOf(inputMint), options.mintOf(outputMint)]);
        if (found === undefined || inMint === undefined || outMint === undefined) return noRoute();
        await options.authorize(found.pool, found.outputVault, outputMint, taker, found.outAmount);
        const takerSource = await options.associatedAccount(taker, inputMint, inMint.program);
        return {
          status: 200,
          body: routeAnswer({
            inputMint,
            outputMint,
            amount,
            slippageBps,
            quote: found,
            label,
            lookupTables: options.lookupTables ?? null,
            swapInstruction: transferCheckedWire(
              inMint.program,
              takerSource,
              inputMint,
              found.inputVault,
              taker,
              amount,
              inMint.decimals,
            ),
            cleanupInstruction: transferCheckedWire(
              outMint.program,
              found.outputVault,
              outputMint,
              destination,
              taker,
              found.outAmount,
              outMint.decimals,
            ),
          }),
        };
      });
    },
  };
}

/**
 * x·y = k with the fee kept by the pool: out = reserveOut·net / (reserveIn + net), net = amount
 * less the fee. Undefined when the pool is empty or the amount buys nothing.
 */
export function constantProductQuote(
  reserveIn: bigint,
  reserveOut: bigint,
  amount: bigint,
  feeBps: bigint,
): { outAmount: bigint; feeAmount: bigint; priceImpactPct: string } | undefined {
  if (reserveIn <= 0n || reserveOut <= 0n || amount <= 0n) return undefined;
  const feeAmount = (amount * feeBps) / 10_000n;
  const net = amount - feeAmount;
  const outAmount = (reserveOut * net) / (reserveIn + net);
  if (outAmount <= 0n) return undefined;
  // Against the price before the trade, what the trade's size costs (the fee aside).
  const spot = Number(reserveOut) / Number(reserveIn);
  const impact = Math.max(0, 1 - Number(outAmount) / (Number(net) * spot));
  return { outAmount, feeAmount, priceImpactPct: impact.toFixed(8) };
}

/** Jupiter's answer to "no route" (HTTP 400, COULD_NOT_FIND_ANY_ROUTE). */
export function noRoute(): RouteAnswer {
  return { status: 400, body: { error: "Could not find any route", errorCode: "COULD_NOT_FIND_ANY_ROUTE" } };
}

/** The `/build` answer's JSON, as Jupiter shapes it. */
export function routeAnswer(parts: {
  inputMint: string;
  outputMint: string;
  amount: bigint;
  slippageBps: number;
  quote: RouteQuote;
  label: string;
  lookupTables: Readonly<Record<string, readonly string[]>> | null;
  swapInstruction: WireInstruction;
  cleanupInstruction: WireInstruction | null;
}) {
  const { quote, amount } = parts;
  return {
    inputMint: parts.inputMint,
    outputMint: parts.outputMint,
    inAmount: amount.toString(),
    outAmount: quote.outAmount.toString(),
    otherAmountThreshold: ((quote.outAmount * BigInt(10_000 - parts.slippageBps)) / 10_000n).toString(),
    swapMode: "ExactIn",
    slippageBps: parts.slippageBps,
    priceImpactPct: quote.priceImpactPct,
    routePlan: [
      {
        swapInfo: {
          ammKey: quote.pool.address,
          label: parts.label,
          inputMint: parts.inputMint,
          outputMint: parts.outputMint,
          inAmount: amount.toString(),
          outAmount: quote.outAmount.toString(),
          feeAmount: quote.feeAmount.toString(),
          feeMint: parts.inputMint,
        },
        percent: 100,
        bps: 10_000,
      },
    ],
    computeBudgetInstructions: [computeUnitPriceWire(LOCAL_ROUTE_COMPUTE_UNIT_PRICE)],
    setupInstructions: [] as WireInstruction[],
    swapInstruction: parts.swapInstruction,
    cleanupInstruction: parts.cleanupInstruction,
    otherInstructions: [] as WireInstruction[],
    addressesByLookupTableAddress: parts.lookupTables,
  };
}

export function meta(pubkey: string, isSigner: boolean, isWritable: boolean): WireMeta {
  return { pubkey, isSigner, isWritable };
}

export function wire(
  programId: string,
  accounts: WireMeta[],
  data: Uint8Array | ArrayLike<number>,
): WireInstruction {
  return { programId, accounts, data: Buffer.from(data as Uint8Array).toString("base64") };
}

/** SPL Token's (or Token-2022's) transferChecked: source, mint, destination, authority (signer). */
export function transferCheckedWire(
  program: string,
  source: string,
  mint: string,
  destination: string,
  authority: string,
  amount: bigint,
  decimals: number,
): WireInstruction {
  return wire(
    program,
    [
      meta(source, false, true),
      meta(mint, false, false),
      meta(destination, false, true),
      meta(authority, true, false),
    ],
    getTransferCheckedInstructionDataEncoder().encode({ amount, decimals }),
  );
}

/** Compute Budget's SetComputeUnitPrice: tag 3, then micro-lamports as a u64 little-endian. */
export function computeUnitPriceWire(microLamports: bigint): WireInstruction {
  const data = Buffer.alloc(9);
  data[0] = 3;
  data.writeBigUInt64LE(microLamports, 1);
  return wire(COMPUTE_BUDGET, [], data);
}

import { isBase58Address } from "../chain/base58-address.ts";
import type { CircuitPosition, UpstreamOutcome } from "../upstream/json-upstream.ts";
import { createJsonUpstream, UpstreamError } from "../upstream/json-upstream.ts";

/**
 * The port through which swaps get their instructions, and its adapter for Jupiter's Swap API v2
 * (`GET {base}/build`, dev.jup.ag/docs/swap/build). The adapter only fetches and checks shapes;
 * whether the instructions are safe to sign is the executor's decision, made on what is returned
 * here, so every field it needs is parsed into plain, checked values and nothing else passes.
 */

export interface SwapAccountMeta {
  readonly address: string;
  readonly signer: boolean;
  readonly writable: boolean;
}
export interface SwapInstruction {
  readonly programAddress: string;
  readonly accounts: readonly SwapAccountMeta[];
  readonly data: Uint8Array;
}
export interface SwapBuildRequest {
  readonly inputMint: string;
  readonly outputMint: string;
  readonly amount: bigint;
  /** The derived delegate, which signs for the input tokens. */
  readonly taker: string;
  /** The fee payer (the executor). */
  readonly payer: string;
  /** The owner's output token account. */
  readonly destinationTokenAccount: string;
  readonly slippageBps: number;
  /** Lowered on a retry when the transaction is too large. */
  readonly maxAccounts?: number;
  readonly signal?: AbortSignal;
}
export interface SwapBuild {
  readonly inAmount: bigint;
  readonly outAmount: bigint;
  /** Jupiter's otherAmountThreshold: the least the swap instruction accepts. */
  readonly minimumOut: bigint;
  readonly slippageBps: number;
  /** A decimal string; "" when the answer gives none. */
  readonly priceImpactPct: string;
  readonly routeLabels: readonly string[];
  /** Micro-lamports, from the answer's SetComputeUnitPrice. */
  readonly computeUnitPrice?: bigint;
  readonly setupInstructions: readonly SwapInstruction[];
  readonly swapInstruction: SwapInstruction;
  readonly cleanupInstruction?: SwapInstruction;
  readonly otherInstructions: readonly SwapInstruction[];
  /** addressesByLookupTableAddress: each table's address and the addresses it holds. */
  readonly lookupTables: Readonly<Record<string, readonly string[]>>;
}

/** Jupiter found no route for the pair and amount. Not retryable with the same request. */
export class NoRouteError extends Error {
  override readonly name = "NoRouteError";
}

/**
 * The Swap API could not give a usable answer now: timeout, 5xx, 429, network, oversize,
 * malformed, circuit open. Retryable. The message is ours (never upstream text); `reason` is the
 * upstream outcome (`timeout`, `rate_limited`, `bad_response`, …) for metrics and backoff.
 */
export class SwapApiUnavailableError extends Error {
  override readonly name = "SwapApiUnavailableError";
  readonly reason: Exclude<UpstreamOutcome, "ok">;
  /** For `rate_limited`: how long Jupiter asked to be left alone, in ms. */
  readonly retryAfterMs: number | undefined;

  constructor(
    reason: Exclude<UpstreamOutcome, "ok">,
    message: string,
    options: { retryAfterMs?: number; cause?: unknown } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.reason = reason;
    this.retryAfterMs = options.retryAfterMs;
  }
}

export interface SwapApi {
  build(request: SwapBuildRequest): Promise<SwapBuild>;
  /**
   * Builds it takes at once, those waiting for a turn included; past that it refuses them at once
   * (`overloaded`). Absent: no such bound (a local route source).
   */
  readonly maxCalls?: number;
}

export interface JupiterSwapApiOptions {
  /** Up to and including `/swap/v2`: calls go to `${baseUrl}/build`. */
  readonly baseUrl: string;
  /** Sent as `x-api-key`; never logged. */
  readonly apiKey?: string;
  readonly timeoutMs: number;
  /** Largest answer read; a larger one fails as `too_large` without being read whole. */
  readonly maxBytes: number;
  readonly fetch?: typeof fetch;
  /** Calls in flight and waiting (defaults 4 and 16). */
  readonly maxConcurrency?: number;
  readonly maxQueued?: number;
  /** Consecutive upstream faults that open the circuit, and for how long (defaults 5, 30 s). */
  readonly breaker?: { readonly failures: number; readonly openMs: number };
  /** For metrics: every call's outcome, and the circuit's changes. */
  readonly onCall?: (endpoint: string, outcome: UpstreamOutcome, seconds: number) => void;
  readonly onCircuit?: (position: CircuitPosition) => void;
}

/** Statuses Jupiter answers a request it cannot route with (a JSON body with `errorCode`). */
const REJECTION_STATUSES = [400, 404, 422];
/** Jupiter's error codes that mean no route exists for this pair and amount. */
const NO_ROUTE_CODES = new Set([
  "COULD_NOT_FIND_ANY_ROUTE",
  "NO_ROUTES_FOUND",
  "TOKEN_NOT_TRADABLE",
  "ROUTE_PLAN_DOES_NOT_CONSUME_ALL_THE_AMOUNT",
  "MARKET_NOT_FOUND",
]);
const NO_ROUTE_TEXT = /no routes? found|could not find any route/i;

/**
 * The /build query of `request` (the same for every route source that answers the contract), and
 * how to read an answer: a route source other than Jupiter's HTTP API (the embedded chain's local
 * pools) answers the same JSON and goes through the same checks, so the executor sees no difference.
 */
export const swapBuildQuery = (request: SwapBuildRequest): string => buildQuery(request);
export const isNoRouteAnswer = (body: unknown): boolean => isNoRoute(body);
export function swapBuildFromAnswer(answer: unknown, request: SwapBuildRequest, source: string): SwapBuild {
  try {
    return parseBuild(answer, request);
  } catch (error) {
    if (!(error instanceof Malformed)) throw error;
    throw new SwapApiUnavailableError(
      "bad_response",
      `${source} answered a build that is not the documented shape (${error.message})`,
    );
  }
}

export function createJupiterSwapApi(options: JupiterSwapApiOptions): SwapApi {
  const maxConcurrency = options.maxConcurrency ?? 4;
  const maxQueued = options.maxQueued ?? 16;
  const upstream = createJsonUpstream({
    name: "Jupiter's Swap API",
    baseUrl: options.baseUrl.replace(/\/+$/, ""),
    headers: options.apiKey === undefined ? {} : { "x-api-key": options.apiKey },
    timeoutMs: options.timeoutMs,
    maxConcurrency,
    maxQueued,
    breaker: options.breaker ?? { failures: 5, openMs: 30_000 },
    defaultRetryAfterMs: 10_000,
    ...(options.onCall === undefined ? {} : { onCall: options.onCall }),
    ...(options.onCircuit === undefined ? {} : { onCircuit: options.onCircuit }),
    ...(options.fetch === undefined ? {} : { fetch: options.fetch }),
  });
  return {
    maxCalls: maxConcurrency + maxQueued,
    async build(request) {
      const query = buildQuery(request);
      let answer: unknown;
      try {
        answer = await upstream.getJson("swap_build", `/build?${query}`, options.maxBytes, {
          ...(request.signal === undefined ? {} : { signal: request.signal }),
          readRejections: REJECTION_STATUSES,
        });
      } catch (error) {
        throw failureOf(error);
      }
      return buildFromAnswer(answer, request);
    },
  };
}

/** The query of a /build call; a request the caller built wrong is a programming error. */
function buildQuery(request: SwapBuildRequest): string {
  for (const field of ["inputMint", "outputMint", "taker", "payer", "destinationTokenAccount"] as const) {
    if (!isBase58Address(request[field])) throw new RangeError(`${field} must be a base58 address`);
  }
  if (request.amount <= 0n || request.amount > U64_MAX) {
    throw new RangeError("amount must be a positive u64");
  }
  if (!Number.isInteger(request.slippageBps) || request.slippageBps < 0 || request.slippageBps > 10_000) {
    throw new RangeError("slippageBps must be an integer from 0 to 10000");
  }
  const query = new URLSearchParams({
    inputMint: request.inputMint,
    outputMint: request.outputMint,
    amount: request.amount.toString(),
    taker: request.taker,
    payer: request.payer,
    destinationTokenAccount: request.destinationTokenAccount,
    slippageBps: String(request.slippageBps),
    // The taker is a delegate over token accounts, not a wallet holding SOL to wrap.
    wrapAndUnwrapSol: "false",
  });
  if (request.maxAccounts !== undefined) {
    if (!Number.isInteger(request.maxAccounts) || request.maxAccounts < 1 || request.maxAccounts > 256) {
      throw new RangeError("maxAccounts must be an integer from 1 to 256");
    }
    query.set("maxAccounts", String(request.maxAccounts));
  }
  return query.toString();
}

function failureOf(error: unknown): Error {
  if (!(error instanceof UpstreamError)) {
    return new SwapApiUnavailableError("bad_response", "Jupiter's Swap API failed", { cause: error });
  }
  if (error.outcome === "rejected") {
    if (isNoRoute(error.body)) return new NoRouteError("Jupiter found no route for this swap");
    // Any other refusal is a request Jupiter did not accept; retrying the same may still fail,
    // but it is not known to be final, so it stays retryable and bounded by the caller's attempts.
    // No cause: it would carry Jupiter's answer into whatever logs the error.
    return new SwapApiUnavailableError(
      "rejected",
      `Jupiter's Swap API refused the request (HTTP ${error.status ?? 0})`,
    );
  }
  return new SwapApiUnavailableError(error.outcome, error.message, {
    cause: error,
    ...(error.retryAfterMs === undefined ? {} : { retryAfterMs: error.retryAfterMs }),
  });
}

function isNoRoute(body: unknown): boolean {
  if (typeof body !== "object" || body === null) return false;
  const { errorCode, error } = body as Record<string, unknown>;
  if (typeof errorCode === "string" && NO_ROUTE_CODES.has(errorCode)) return true;
  return typeof error === "string" && error.length <= 500 && NO_ROUTE_TEXT.test(error);
}

// ── The answer, checked field by field ──────────────────────────────────────────────────────

const U64_MAX = 2n ** 64n - 1n;
const COMPUTE_BUDGET_PROGRAM = "ComputeBudget111111111111111111111111111111";
/** SetComputeUnitPrice's tag in the Compute Budget program's instruction enum. */
const SET_COMPUTE_UNIT_PRICE = 3;
/** Bounds on what one answer may hold; a real answer is far inside them (a transaction is 1232 bytes). */
const MAX_INSTRUCTIONS = 32;
const MAX_ACCOUNTS_PER_INSTRUCTION = 128;
const MAX_DATA_BYTES = 1232;
const MAX_LOOKUP_TABLES = 16;
const MAX_TABLE_ADDRESSES = 256;
const MAX_ROUTE_STEPS = 16;
/** Jupiter's route labels ("Raydium CLMM", "Meteora DLMM", "Pump.fun Amm"); others are not shown. */
const LABEL = /^[A-Za-z0-9 .()+_-]{1,40}$/;
const DECIMAL = /^-?\d{1,30}(\.\d{1,30})?([eE]-?\d{1,3})?$/;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** A malformed answer: the field is named, never the value (upstream text). */
class Malformed extends Error {}

function buildFromAnswer(answer: unknown, request: SwapBuildRequest): SwapBuild {
  try {
    return parseBuild(answer, request);
  } catch (error) {
    if (!(error instanceof Malformed)) throw error;
    throw new SwapApiUnavailableError(
      "bad_response",
      `Jupiter's Swap API answered a build that is not the documented shape (${error.message})`,
    );
  }
}

function parseBuild(answer: unknown, request: SwapBuildRequest): SwapBuild {
  const root = record(answer, "the answer");
  // An answer for another pair or amount is not this swap's, whatever its instructions do
  // (the mints are optional on the wire; the amount is not: /build is ExactIn only).
  for (const field of ["inputMint", "outputMint"] as const) {
    if (root[field] !== undefined && root[field] !== request[field]) {
      throw new Malformed(`${field} is not the one asked for`);
    }
  }
  const inAmount = amount(root.inAmount, "inAmount");
  if (inAmount !== request.amount) throw new Malformed("inAmount is not the amount asked for");
  const compute = list(root.computeBudgetInstructions ?? [], "computeBudgetInstructions").map((item, i) =>
    instruction(item, `computeBudgetInstructions[${i}]`),
  );
  const setupInstructions = list(root.setupInstructions ?? [], "setupInstructions").map((item, i) =>
    instruction(item, `setupInstructions[${i}]`),
  );
  const otherInstructions = list(root.otherInstructions ?? [], "otherInstructions").map((item, i) =>
    instruction(item, `otherInstructions[${i}]`),
  );
  const swapInstruction = instruction(root.swapInstruction, "swapInstruction");
  const cleanupInstruction =
    root.cleanupInstruction === undefined || root.cleanupInstruction === null
      ? undefined
      : instruction(root.cleanupInstruction, "cleanupInstruction");
  const count =
    compute.length + setupInstructions.length + otherInstructions.length + 1 + (cleanupInstruction ? 1 : 0);
  if (count > MAX_INSTRUCTIONS) throw new Malformed(`more than ${MAX_INSTRUCTIONS} instructions`);
  const computeUnitPrice = computeUnitPriceOf(compute);
  const slippageBps = root.slippageBps;
  if (
    typeof slippageBps !== "number" ||
    !Number.isInteger(slippageBps) ||
    slippageBps < 0 ||
    slippageBps > 10_000
  ) {
    throw new Malformed("slippageBps is not an integer from 0 to 10000");
  }
  return {
    inAmount,
    outAmount: amount(root.outAmount, "outAmount"),
    minimumOut: amount(root.otherAmountThreshold, "otherAmountThreshold"),
    slippageBps,
    priceImpactPct: priceImpact(root.priceImpactPct),
    routeLabels: routeLabels(root.routePlan),
    ...(computeUnitPrice === undefined ? {} : { computeUnitPrice }),
    setupInstructions,
    swapInstruction,
    ...(cleanupInstruction === undefined ? {} : { cleanupInstruction }),
    otherInstructions,
    lookupTables: lookupTables(root.addressesByLookupTableAddress),
  };
}

function record(value: unknown, field: string): Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new Malformed(`${field} is not an object`);
  }
  return value as Record<string, unknown>;
}

function list(value: unknown, field: string): unknown[] {
  if (!Array.isArray(value)) throw new Malformed(`${field} is not a list`);
  if (value.length > MAX_INSTRUCTIONS) throw new Malformed(`${field} has too many entries`);
  return value;
}

function address(value: unknown, field: string): string {
  if (typeof value !== "string" || !isBase58Address(value))
    throw new Malformed(`${field} is not a base58 address`);
  return value;
}

/** A u64 as Jupiter sends it: a string of decimal digits. */
function amount(value: unknown, field: string): bigint {
  if (typeof value !== "string" || !/^\d{1,20}$/.test(value)) {
    throw new Malformed(`${field} is not a decimal amount`);
  }
  const parsed = BigInt(value);
  if (parsed > U64_MAX) throw new Malformed(`${field} is larger than a u64`);
  return parsed;
}

function instruction(value: unknown, field: string): SwapInstruction {
  const { programId, accounts, data } = record(value, field);
  const programAddress = address(programId, `${field}.programId`);
  if (!Array.isArray(accounts) || accounts.length > MAX_ACCOUNTS_PER_INSTRUCTION) {
    throw new Malformed(`${field}.accounts is not a list of at most ${MAX_ACCOUNTS_PER_INSTRUCTION}`);
  }
  const metas = accounts.map((item, i) => {
    const { pubkey, isSigner, isWritable } = record(item, `${field}.accounts[${i}]`);
    if (typeof isSigner !== "boolean" || typeof isWritable !== "boolean") {
      throw new Malformed(`${field}.accounts[${i}] lacks isSigner or isWritable`);
    }
    return {
      address: address(pubkey, `${field}.accounts[${i}].pubkey`),
      signer: isSigner,
      writable: isWritable,
    };
  });
  if (typeof data !== "string" || data.length > Math.ceil(MAX_DATA_BYTES / 3) * 4 || !BASE64.test(data)) {
    throw new Malformed(`${field}.data is not base64 of at most ${MAX_DATA_BYTES} bytes`);
  }
  return { programAddress, accounts: metas, data: new Uint8Array(Buffer.from(data, "base64")) };
}

/**
 * The price from the answer's SetComputeUnitPrice (tag 3, then a u64 little-endian). Only Compute
 * Budget instructions may be in that list; the unit limit is the executor's to set from its own
 * simulation, so it is not kept.
 */
function computeUnitPriceOf(instructions: readonly SwapInstruction[]): bigint | undefined {
  let price: bigint | undefined;
  for (const [i, item] of instructions.entries()) {
    if (item.programAddress !== COMPUTE_BUDGET_PROGRAM) {
      throw new Malformed(`computeBudgetInstructions[${i}] is not a Compute Budget instruction`);
    }
    if (item.data[0] !== SET_COMPUTE_UNIT_PRICE) continue;
    if (item.data.length !== 9) throw new Malformed(`computeBudgetInstructions[${i}] has a bad unit price`);
    price = new DataView(item.data.buffer, item.data.byteOffset, 9).getBigUint64(1, true);
  }
  return price;
}

function priceImpact(value: unknown): string {
  if (value === undefined || value === null) return "";
  const text = typeof value === "number" && Number.isFinite(value) ? String(value) : value;
  if (typeof text !== "string" || !DECIMAL.test(text)) throw new Malformed("priceImpactPct is not a decimal");
  return text;
}

function routeLabels(value: unknown): readonly string[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value) || value.length > MAX_ROUTE_STEPS) {
    throw new Malformed(`routePlan is not a list of at most ${MAX_ROUTE_STEPS}`);
  }
  return value.map((step, i) => {
    const { swapInfo } = record(step, `routePlan[${i}]`);
    const { label } = record(swapInfo, `routePlan[${i}].swapInfo`);
    // A label is shown to owners; one outside the expected alphabet is not passed on.
    return typeof label === "string" && LABEL.test(label) ? label : "unknown";
  });
}

function lookupTables(value: unknown): Readonly<Record<string, readonly string[]>> {
  if (value === undefined || value === null) return {};
  const entries = Object.entries(record(value, "addressesByLookupTableAddress"));
  if (entries.length > MAX_LOOKUP_TABLES) {
    throw new Malformed(`addressesByLookupTableAddress has more than ${MAX_LOOKUP_TABLES} tables`);
  }
  // A null prototype: table addresses are checked, but the object must not inherit anything either.
  const tables: Record<string, readonly string[]> = Object.create(null);
  for (const [table, addresses] of entries) {
    address(table, "a lookup table");
    if (!Array.isArray(addresses) || addresses.length > MAX_TABLE_ADDRESSES) {
      throw new Malformed(`a lookup table's addresses are not a list of at most ${MAX_TABLE_ADDRESSES}`);
    }
    tables[table] = addresses.map((entry) => address(entry, "a lookup table's address"));
  }
  return tables;
}

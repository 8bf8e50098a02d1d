import { createHash } from "node:crypto";
import type { JsonObject } from "../agent/agent-store.ts";
import { UnavailableError } from "../domain/errors.ts";
import type { PriceSource, TokenPrice } from "../token/token-source.ts";
import { abortableSleep } from "./abortable-sleep.ts";
import type { ExecutionResult, Executor } from "./executor.ts";

export interface SimulatedFaults {
  /**
   * Share of attempts (0..1) that fail. Which ones is a pure function of (agent, slot, attempt), so
   * every replica and every rerun agrees: deterministic, yet spread over agents and slots.
   */
  readonly failureRate?: number;
  /** Attempts that hang (never answer until aborted), as a share of attempts, chosen the same way. */
  readonly hangRate?: number;
  /** How long an attempt takes, in ms (a chain transaction takes seconds; tests want less). */
  readonly latencyMs?: number;
}

/**
 * Runs agents against the embedded catalog without touching a chain. A transfer records the amount
 * and token; a swap quotes its output from catalog prices less `slippageBps`. Deterministic: the
 * same (agent, slot) gives the same result and the same simulated signature on every attempt and
 * replica, which is how it honours the idempotency key. Tests make attempts fail or hang through
 * `faults` (SIMULATED_FAILURE_RATE, SIMULATED_HANG_RATE).
 */
export function createSimulatedExecutor(options: {
  tokens: PriceSource;
  /** The catalog's mint of a symbol agents name. */
  mintOf: (symbol: string) => string | undefined;
  faults?: SimulatedFaults;
}): Executor {
  const { tokens, mintOf } = options;
  const faults = options.faults ?? {};
  return {
    async execute(execution) {
      const { agent, idempotencyKey, attempt, signal } = execution;
      const roll = unitInterval(`${idempotencyKey}.${attempt}`);
      if (roll < (faults.hangRate ?? 0)) {
        await abortableSleep(Number.POSITIVE_INFINITY, signal);
        return { ok: false, error: "the run was abandoned before it finished" };
      }
      if ((faults.latencyMs ?? 0) > 0) await abortableSleep(faults.latencyMs ?? 0, signal);
      if (signal.aborted) return { ok: false, error: "the run was abandoned before it finished" };
      if (roll < (faults.hangRate ?? 0) + (faults.failureRate ?? 0)) {
        return { ok: false, error: "simulated failure" };
      }
      const signature = simulatedSignature(idempotencyKey);
      if (agent.type === "transfer") {
        const { source, destination, amount, token } = agent.config;
        return {
          ok: true,
          result: {
            kind: "transfer",
            simulated: true,
            source,
            destination,
            amount,
            token,
            signature,
          } as JsonObject,
        };
      }
      return swap(agent.config, tokens, mintOf, signature);
    },
  };
}

async function swap(
  config: JsonObject,
  tokens: PriceSource,
  mintOf: (symbol: string) => string | undefined,
  signature: string,
): Promise<ExecutionResult> {
  const { inputToken, outputToken, amount, slippageBps } = config;
  const inputMint = mintOf(String(inputToken));
  const outputMint = mintOf(String(outputToken));
  if (inputMint === undefined || outputMint === undefined) {
    return { ok: false, error: "a token of this swap is no longer in the catalog" };
  }
  let input: TokenPrice | undefined;
  let output: TokenPrice | undefined;
  try {
    [input, output] = await tokens.pricesOf([inputMint, outputMint]);
  } catch (error) {
    // The price source is down: a later attempt may find it back.
    if (error instanceof UnavailableError) return { ok: false, error: error.message };
    throw error;
  }
  if (input === undefined || output === undefined || input.unpriced || output.unpriced || output.price <= 0) {
    return { ok: false, error: "a token of this swap has no price to quote it at" };
  }
  const bps = typeof slippageBps === "number" ? slippageBps : 0;
  const quoted = ((amount as number) * input.price) / output.price;
  const minimumOut = quoted * (1 - bps / 10_000);
  return {
    ok: true,
    result: {
      kind: "swap",
      simulated: true,
      inputToken: String(inputToken),
      outputToken: String(outputToken),
      amountIn: amount as number,
      quotedOut: round(quoted),
      minimumOut: round(minimumOut),
      slippageBps: bps,
      signature,
    },
  };
}

/** 12 significant digits: enough for any token amount, without float noise in the JSON. */
function round(value: number): number {
  return Number(value.toPrecision(12));
}

/** A base58-looking 64-byte signature derived from the key, as a chain would return one. */
function simulatedSignature(key: string): string {
  const alphabet = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";
  const bytes = Buffer.concat([
    createHash("sha256").update(`sig1.${key}`).digest(),
    createHash("sha256").update(`sig2.${key}`).digest(),
  ]);
  let out = "";
  for (const byte of bytes) out += alphabet[byte % 58];
  return out + out.slice(0, 24);
}

/** A number in [0, 1) from a string, the same everywhere. */
function unitInterval(text: string): number {
  return createHash("sha256").update(text).digest().readUInt32BE(0) / 2 ** 32;
}

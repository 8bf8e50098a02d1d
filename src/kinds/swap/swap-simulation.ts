import { UnavailableError } from "../../domain/errors.ts";
import type { ExecutionResult } from "../../scheduler/executor.ts";
import type { TokenPrice } from "../../token/token-source.ts";
import type { SimulatedRun } from "../agent-kind.ts";

/** A swap that moves nothing: its output quoted from the price source's prices less `slippageBps`. */
export async function simulateSwap({
  config,
  prices,
  mintOf,
  signature,
}: SimulatedRun): Promise<ExecutionResult> {
  const { inputToken, outputToken, amount, slippageBps } = config;
  const inputMint = mintOf(String(inputToken));
  const outputMint = mintOf(String(outputToken));
  if (inputMint === undefined || outputMint === undefined) {
    return { ok: false, error: "a token of this swap is no longer in the catalog" };
  }
  let input: TokenPrice | undefined;
  let output: TokenPrice | undefined;
  try {
    [input, output] = await prices.pricesOf([inputMint, outputMint]);
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

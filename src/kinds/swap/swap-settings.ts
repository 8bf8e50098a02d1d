import {
  address,
  canonical,
  type KindConfigRules,
  positive,
  price,
  schedule,
  slippage,
  symbol,
} from "../../agent/agent-config.ts";
import type { JsonValue } from "../../agent/agent-store.ts";
import type { FieldViolation } from "../../domain/errors.ts";

const DEFAULT_SLIPPAGE_BPS = 50;

/** A swap's settings: which wallet gives how much of one token for another, when, and at what worst price. */
export const SWAP_SETTINGS: KindConfigRules = {
  settings: {
    wallet: address,
    inputToken: symbol,
    outputToken: symbol,
    amount: positive,
    slippageBps: slippage,
    schedule,
    minPrice: price,
    maxPrice: price,
  },
  optional: new Set(["slippageBps", "minPrice", "maxPrice"]),
  async crossField(config, { lookupSymbol }) {
    const inputToken = await canonical(config.inputToken, lookupSymbol);
    const outputToken = await canonical(config.outputToken, lookupSymbol);
    const violations: FieldViolation[] = [];
    if (inputToken !== undefined && inputToken === outputToken) {
      violations.push({ field: "config.outputToken", description: "must differ from config.inputToken" });
    }
    const { minPrice, maxPrice } = config;
    const valid = async (v: JsonValue | undefined) =>
      v !== undefined && (await price(v, { lookupSymbol })) === undefined;
    if ((await valid(minPrice)) && (await valid(maxPrice)) && (minPrice as number) > (maxPrice as number)) {
      violations.push({ field: "config.maxPrice", description: "must be at least config.minPrice" });
    }
    return violations;
  },
  tokenFields: ["inputToken", "outputToken"],
  // A swap's amount in must arrive whole, which a transfer fee breaks, and a hook may run anything
  // on every transfer (Jupiter's own DCA refuses both).
  refusedExtensions: {
    TransferFeeConfig: "takes a transfer fee",
    TransferHook: "runs a transfer hook",
  },
  // A swap's amount is of the token it gives up.
  amountToken: (config, { lookupSymbol }) => canonical(config.inputToken, lookupSymbol),
  async normalise(config, { lookupSymbol }) {
    return {
      ...config,
      inputToken: (await canonical(config.inputToken, lookupSymbol)) as string,
      outputToken: (await canonical(config.outputToken, lookupSymbol)) as string,
      slippageBps: config.slippageBps ?? DEFAULT_SLIPPAGE_BPS,
    };
  },
};

import { address, canonical, type KindConfigRules, positive, symbol } from "../../agent/agent-config.ts";
import type { JsonObject, JsonValue } from "../../agent/agent-store.ts";
import type { FieldViolation } from "../../domain/errors.ts";

/** The worst fill an order may accept, in basis points of its base price. */
export const MAX_TRIGGER_SLIPPAGE_BPS = 2000;
/** An order that waits for a better price (limit, take-profit) gives up little; a stop gives up more to fill. */
export const DEFAULT_LIMIT_SLIPPAGE_BPS = 50;
export const DEFAULT_STOP_SLIPPAGE_BPS = 300;
/** Longest RFC 3339 timestamp read: "2026-12-06T12:00:00.123456789+14:00" and a little. */
const MAX_TIMESTAMP_LENGTH = 40;
const RFC_3339 = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})$/;

export interface TriggerSettingsOptions {
  /** TRIGGER_MAX_LIFETIME_MS. */
  readonly maxLifetimeMs: number;
  /** TRIGGER_MIN_USD. */
  readonly minUsd: number;
  readonly now: () => Date;
  /** Whether the catalog token (by its catalog symbol) is a USD stablecoin. */
  readonly isStablecoin: (symbol: string) => boolean;
  /** The token's USD price now (a fresh one), or undefined when it has none; throws when none can be had. */
  readonly usdPrice: (symbol: string) => Promise<number | undefined>;
}

const conditionRule = async (v: JsonValue | undefined) =>
  v === undefined || v === "above" || v === "below" ? undefined : 'must be "above" or "below"';
const orderTypeRule = async (v: JsonValue | undefined) =>
  v === undefined || v === "single" || v === "oco" ? undefined : 'must be "single" or "oco"';
const usdRule = async (v: JsonValue | undefined) =>
  v === undefined || (typeof v === "number" && Number.isFinite(v) && v > 0)
    ? undefined
    : "must be a positive decimal number of US dollars per whole token";
const slippageRule = async (v: JsonValue | undefined) =>
  v === undefined || (typeof v === "number" && Number.isInteger(v) && v >= 1 && v <= MAX_TRIGGER_SLIPPAGE_BPS)
    ? undefined
    : `must be an integer from 1 to ${MAX_TRIGGER_SLIPPAGE_BPS} (basis points against the order's worst price)`;
const optionalSymbol = async (v: JsonValue | undefined, context: Parameters<typeof symbol>[1]) =>
  v === undefined ? undefined : symbol(v, context);

/** The instant an RFC 3339 `expiresAt` names, or undefined when it is not one. */
export function instantOf(value: JsonValue | undefined): Date | undefined {
  if (typeof value !== "string" || value.length > MAX_TIMESTAMP_LENGTH || !RFC_3339.test(value))
    return undefined;
  const at = new Date(value);
  return Number.isNaN(at.getTime()) ? undefined : at;
}

/**
 * A trigger order's settings: which wallet gives how much of one token for another, once, when
 * the trigger token's USD price holds above or below a level (or, OCO, the first of two), at what
 * worst fill, until when.
 */
export function createTriggerSettings(options: TriggerSettingsOptions): KindConfigRules {
  const { maxLifetimeMs, minUsd, now, isStablecoin } = options;
  const expiresRule = async (v: JsonValue | undefined) => {
    const at = instantOf(v);
    if (at === undefined) return 'must be an RFC 3339 timestamp such as "2026-12-31T23:59:00Z"';
    const ahead = at.getTime() - now().getTime();
    if (ahead <= 0) return "must be in the future";
    if (ahead > maxLifetimeMs) {
      return `must be at most ${Math.floor(maxLifetimeMs / 3_600_000)} hours ahead (TRIGGER_MAX_LIFETIME_MS); an order with no near end is how approvals are forgotten`;
    }
    return undefined;
  };
  return {
    settings: {
      wallet: address,
      inputToken: symbol,
      outputToken: symbol,
      amount: positive,
      triggerToken: optionalSymbol,
      orderType: orderTypeRule,
      triggerCondition: conditionRule,
      triggerPriceUsd: usdRule,
      takeProfitPriceUsd: usdRule,
      stopLossPriceUsd: usdRule,
      slippageBps: slippageRule,
      expiresAt: expiresRule,
    },
    optional: new Set([
      "triggerToken",
      "orderType",
      "triggerCondition",
      "triggerPriceUsd",
      "takeProfitPriceUsd",
      "stopLossPriceUsd",
      "slippageBps",
    ]),
    async crossField(config, { lookupSymbol }) {
      const violations: FieldViolation[] = [];
      const input = await canonical(config.inputToken, lookupSymbol);
      const output = await canonical(config.outputToken, lookupSymbol);
      if (input !== undefined && input === output) {
        violations.push({ field: "config.outputToken", description: "must differ from config.inputToken" });
      }
      // The watched token: named, or the side that is not a USD stablecoin when exactly one is.
      if (config.triggerToken !== undefined) {
        const named = await canonical(config.triggerToken, lookupSymbol);
        if (
          named !== undefined &&
          input !== undefined &&
          output !== undefined &&
          named !== input &&
          named !== output
        ) {
          violations.push({
            field: "config.triggerToken",
            description: `must be one of the order's two tokens (${input} or ${output})`,
          });
        }
      } else if (
        input !== undefined &&
        output !== undefined &&
        isStablecoin(input) === isStablecoin(output)
      ) {
        violations.push({
          field: "config.triggerToken",
          description: `is required unless exactly one of the order's tokens is a USD stablecoin: name ${input} or ${output}, the token whose USD price is watched`,
        });
      }
      violations.push(...(await legViolations(config)));
      // Worth at least TRIGGER_MIN_USD now: asked only of an otherwise valid order (it reads a price).
      const { amount } = config;
      if (
        violations.length === 0 &&
        input !== undefined &&
        typeof amount === "number" &&
        Number.isFinite(amount) &&
        amount > 0 &&
        minUsd > 0
      ) {
        const price = await options.usdPrice(input);
        if (price === undefined || amount * price < minUsd) {
          violations.push({
            field: "config.amount",
            description:
              price === undefined
                ? `must be of a token with a USD price, so that the order's worth can be checked against TRIGGER_MIN_USD (${minUsd} USD), and ${input} has none`
                : `must be worth at least ${minUsd} USD (TRIGGER_MIN_USD), and ${amount} ${input} is worth ${Number((amount * price).toPrecision(4))} USD now`,
          });
        }
      }
      return violations;
    },
    tokenFields: ["inputToken", "outputToken"],
    // As for a swap: the amount in must arrive whole, and no hook may run on the owner's transfer.
    refusedExtensions: {
      TransferFeeConfig: "takes a transfer fee",
      TransferHook: "runs a transfer hook",
    },
    amountToken: (config, { lookupSymbol }) => canonical(config.inputToken, lookupSymbol),
    async normalise(config, { lookupSymbol }) {
      const inputToken = (await canonical(config.inputToken, lookupSymbol)) as string;
      const outputToken = (await canonical(config.outputToken, lookupSymbol)) as string;
      const triggerToken =
        (await canonical(config.triggerToken, lookupSymbol)) ??
        (isStablecoin(inputToken) ? outputToken : inputToken);
      const normal: JsonObject = {
        ...config,
        inputToken,
        outputToken,
        triggerToken,
        orderType: config.orderType ?? "single",
        expiresAt: (instantOf(config.expiresAt) as Date).toISOString(),
      };
      return normal;
    },
  };
}

/** The legs' settings: a single order's condition and price, or an OCO's two prices in order. */
async function legViolations(config: JsonObject): Promise<FieldViolation[]> {
  const violations: FieldViolation[] = [];
  const oco = config.orderType === "oco";
  const single = config.orderType === undefined || config.orderType === "single";
  if (single) {
    for (const field of ["triggerCondition", "triggerPriceUsd"]) {
      if (config[field] === undefined) {
        violations.push({ field: `config.${field}`, description: 'is required for a "single" order' });
      }
    }
    for (const field of ["takeProfitPriceUsd", "stopLossPriceUsd"]) {
      if (config[field] !== undefined) {
        violations.push({
          field: `config.${field}`,
          description:
            'is for an "oco" order only; a "single" order takes triggerCondition and triggerPriceUsd',
        });
      }
    }
  }
  if (oco) {
    for (const field of ["takeProfitPriceUsd", "stopLossPriceUsd"]) {
      if (config[field] === undefined) {
        violations.push({ field: `config.${field}`, description: 'is required for an "oco" order' });
      }
    }
    for (const field of ["triggerCondition", "triggerPriceUsd"]) {
      if (config[field] !== undefined) {
        violations.push({
          field: `config.${field}`,
          description:
            'is for a "single" order only; an "oco" order takes takeProfitPriceUsd and stopLossPriceUsd',
        });
      }
    }
    const { takeProfitPriceUsd: tp, stopLossPriceUsd: sl } = config;
    if (
      (await usdRule(tp)) === undefined &&
      (await usdRule(sl)) === undefined &&
      typeof tp === "number" &&
      typeof sl === "number" &&
      tp <= sl
    ) {
      violations.push({
        field: "config.takeProfitPriceUsd",
        description: `must be greater than config.stopLossPriceUsd (${sl})`,
      });
    }
  }
  return violations;
}

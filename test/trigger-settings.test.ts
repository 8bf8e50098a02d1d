/**
 * A trigger order's config as CreateAgent checks it: every mistake is its own violation, naming
 * the field and the rule, and a valid order is stored normalised (catalog spellings, its watched
 * token, its order type, its expiry in UTC). The rules are called directly, with a fixed clock
 * and prices (JUP at 0.5 USD, USDC at 1).
 */
import { describe, expect, it } from "vitest";
import { validateAgentConfig } from "../src/agent/agent-config.ts";
import type { JsonObject } from "../src/agent/agent-store.ts";
import type { FieldViolation } from "../src/domain/errors.ts";
import { createTriggerKind } from "../src/kinds/trigger/trigger-kind.ts";
import { createTriggerSightings } from "../src/kinds/trigger/trigger-sightings.ts";

const WALLET = "9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM";
const NOW = new Date("2026-12-06T12:00:00Z");
const DAY_MS = 86_400_000;
const SYMBOLS = ["SOL", "USDC", "USDT", "JUP"];
const PRICES: Record<string, number> = { SOL: 140, USDC: 1, USDT: 1, JUP: 0.5 };
const lookupSymbol = async (symbol: string) => SYMBOLS.find((s) => s.toLowerCase() === symbol.toLowerCase());

const kind = createTriggerKind({
  maxLifetimeMs: 30 * DAY_MS,
  minUsd: 5,
  now: () => NOW,
  isStablecoin: (symbol) => symbol === "USDC" || symbol === "USDT",
  usdPrice: async (symbol) => PRICES[symbol],
  sightings: createTriggerSightings(),
  mintOf: (symbol) => symbol,
});

const stopLoss: JsonObject = {
  wallet: WALLET,
  inputToken: "JUP",
  outputToken: "USDC",
  amount: 20,
  triggerCondition: "below",
  triggerPriceUsd: 0.45,
  expiresAt: "2026-12-07T12:00:00Z",
};

async function check(config: JsonObject) {
  const violations: FieldViolation[] = [];
  const valid = await validateAgentConfig(kind, config, lookupSymbol, violations, async () => 6);
  return { valid, violations };
}

const only = async (config: JsonObject) => {
  const { valid, violations } = await check(config);
  expect(valid).toBeUndefined();
  return violations;
};

describe("a trigger order's config", () => {
  it("stores a valid stop-loss normalised: its watched token, its type, its expiry in UTC", async () => {
    const { valid, violations } = await check({
      ...stopLoss,
      inputToken: "jup",
      expiresAt: "2026-12-07T13:00:00+01:00",
    });
    expect(violations).toEqual([]);
    expect(valid?.config).toMatchObject({
      inputToken: "JUP",
      triggerToken: "JUP",
      orderType: "single",
      expiresAt: "2026-12-07T12:00:00.000Z",
    });
  });

  it("watches the side that is not a stablecoin, and needs triggerToken when both or neither are", async () => {
    const buy = await check({ ...stopLoss, inputToken: "USDC", outputToken: "JUP", amount: 10 });
    expect(buy.valid?.config.triggerToken).toBe("JUP");
    expect(await only({ ...stopLoss, inputToken: "SOL", outputToken: "JUP", amount: 1 })).toEqual([
      {
        field: "config.triggerToken",
        description: expect.stringMatching(
          /^is required unless exactly one of the order's tokens is a USD stablecoin/,
        ),
      },
    ]);
    const named = await check({
      ...stopLoss,
      inputToken: "SOL",
      outputToken: "JUP",
      amount: 1,
      triggerToken: "SOL",
    });
    expect(named.violations).toEqual([]);
    expect(await only({ ...stopLoss, triggerToken: "SOL" })).toEqual([
      { field: "config.triggerToken", description: "must be one of the order's two tokens (JUP or USDC)" },
    ]);
  });

  it.each([
    ["a missing expiresAt", { expiresAt: undefined }, "config.expiresAt", "is required"],
    ["a past expiresAt", { expiresAt: "2026-12-06T11:59:59Z" }, "config.expiresAt", "must be in the future"],
    [
      "an expiresAt that is no timestamp",
      { expiresAt: "tomorrow" },
      "config.expiresAt",
      /^must be an RFC 3339 timestamp/,
    ],
    [
      "an expiresAt past the lifetime",
      { expiresAt: "2027-01-06T12:00:01Z" },
      "config.expiresAt",
      /^must be at most 720 hours ahead/,
    ],
    [
      "a condition that is neither",
      { triggerCondition: "crosses" },
      "config.triggerCondition",
      'must be "above" or "below"',
    ],
    [
      "a negative price",
      { triggerPriceUsd: -1 },
      "config.triggerPriceUsd",
      /^must be a positive decimal number/,
    ],
    [
      "a price in a string",
      { triggerPriceUsd: "0.45" },
      "config.triggerPriceUsd",
      /^must be a positive decimal number/,
    ],
    ["an unknown order type", { orderType: "bracket" }, "config.orderType", 'must be "single" or "oco"'],
    [
      "a slippage past 2,000",
      { slippageBps: 2001 },
      "config.slippageBps",
      /^must be an integer from 1 to 2000/,
    ],
    [
      "a fractional slippage",
      { slippageBps: 1.5 },
      "config.slippageBps",
      /^must be an integer from 1 to 2000/,
    ],
    [
      "a missing condition",
      { triggerCondition: undefined },
      "config.triggerCondition",
      'is required for a "single" order',
    ],
    [
      "a missing price",
      { triggerPriceUsd: undefined },
      "config.triggerPriceUsd",
      'is required for a "single" order',
    ],
    [
      "a take-profit on a single order",
      { takeProfitPriceUsd: 1 },
      "config.takeProfitPriceUsd",
      /^is for an "oco" order only/,
    ],
    [
      "an order worth too little",
      { amount: 9 },
      "config.amount",
      /^must be worth at least 5 USD \(TRIGGER_MIN_USD\), and 9 JUP is worth 4\.5 USD now$/,
    ],
    [
      "the same token twice",
      { outputToken: "JUP", triggerToken: "JUP" },
      "config.outputToken",
      "must differ from config.inputToken",
    ],
    ["a wallet that is no address", { wallet: "nope" }, "config.wallet", /address/],
    [
      "an unknown token",
      { outputToken: "NOPE" },
      "config.outputToken",
      /^must be the symbol of a token in the catalog/,
    ],
    ["an unknown setting", { schedule: "hourly" }, "config.schedule", /^is not a trigger agent setting/],
  ])("refuses %s, naming the field", async (_, change, field, description) => {
    const config: JsonObject = { ...stopLoss };
    for (const [key, value] of Object.entries(change)) {
      if (value === undefined) delete config[key];
      else config[key] = value as JsonObject[string];
    }
    const violations = await only(config);
    expect(violations).toContainEqual({
      field,
      description: typeof description === "string" ? description : expect.stringMatching(description),
    });
  });

  it("an OCO order takes two legs, take-profit above stop-loss, and no single-order fields", async () => {
    const oco: JsonObject = { ...stopLoss, orderType: "oco" };
    delete oco.triggerCondition;
    delete oco.triggerPriceUsd;
    const valid = await check({ ...oco, takeProfitPriceUsd: 0.6, stopLossPriceUsd: 0.4 });
    expect(valid.violations).toEqual([]);
    expect(await only({ ...oco, takeProfitPriceUsd: 0.4, stopLossPriceUsd: 0.4 })).toEqual([
      {
        field: "config.takeProfitPriceUsd",
        description: "must be greater than config.stopLossPriceUsd (0.4)",
      },
    ]);
    expect(await only({ ...oco, takeProfitPriceUsd: 0.6 })).toEqual([
      { field: "config.stopLossPriceUsd", description: 'is required for an "oco" order' },
    ]);
    expect(
      await only({ ...oco, takeProfitPriceUsd: 0.6, stopLossPriceUsd: 0.4, triggerPriceUsd: 0.5 }),
    ).toEqual([
      {
        field: "config.triggerPriceUsd",
        description: expect.stringMatching(/^is for a "single" order only/),
      },
    ]);
  });

  it("lists every mistake of one request at once", async () => {
    const violations = await only({
      ...stopLoss,
      triggerCondition: "sideways",
      slippageBps: 0,
      expiresAt: "2020-01-01T00:00:00Z",
    });
    expect(violations.map((v) => v.field)).toEqual([
      "config.triggerCondition",
      "config.slippageBps",
      "config.expiresAt",
    ]);
  });
});

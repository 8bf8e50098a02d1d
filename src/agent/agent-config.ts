import { ADDRESS_RULE, isAddress } from "../domain/base58.ts";
import { alternatives, type FieldViolation } from "../domain/errors.ts";
import type { AgentType, JsonObject, JsonValue } from "./agent-store.ts";
import { SCHEDULES, type Schedule } from "./schedule.ts";

/** Looks a token symbol up in the catalog, case-insensitively, and returns its catalog spelling. */
export type SymbolLookup = (symbol: string) => Promise<string | undefined>;

export interface ValidConfig {
  readonly config: JsonObject;
  readonly schedule: Schedule;
}

const DEFAULT_SLIPPAGE_BPS = 50;
const MAX_SLIPPAGE_BPS = 5000;

type FieldRule = (value: JsonValue | undefined, field: string) => Promise<string | undefined>;

/**
 * Validates an agent's config for its type and returns it normalised (catalog spelling of token
 * symbols, defaults applied). Every bad or unknown member yields its own violation, named by its
 * path (`config.amount`), so a caller fixes the whole request at once.
 */
export async function validateAgentConfig(
  type: AgentType,
  config: JsonObject,
  lookupSymbol: SymbolLookup,
  violations: FieldViolation[],
): Promise<ValidConfig | undefined> {
  const address: FieldRule = async (v) => (typeof v === "string" && isAddress(v) ? undefined : ADDRESS_RULE);
  const positive: FieldRule = async (v) =>
    typeof v === "number" && Number.isFinite(v) && v > 0
      ? undefined
      : "must be a finite number greater than 0";
  const symbol: FieldRule = async (v) =>
    typeof v === "string" && (await lookupSymbol(v)) !== undefined
      ? undefined
      : "must be the symbol of a token in the catalog (see GetTokenPrices)";
  const schedule: FieldRule = async (v) =>
    typeof v === "string" && (SCHEDULES as readonly string[]).includes(v)
      ? undefined
      : `must be one of ${alternatives(SCHEDULES)}`;
  const slippage: FieldRule = async (v) =>
    v === undefined || (typeof v === "number" && Number.isInteger(v) && v >= 1 && v <= MAX_SLIPPAGE_BPS)
      ? undefined
      : `must be an integer from 1 to ${MAX_SLIPPAGE_BPS}`;

  const rules: Record<string, FieldRule> =
    type === "transfer"
      ? { source: address, destination: address, amount: positive, token: symbol, schedule }
      : {
          wallet: address,
          inputToken: symbol,
          outputToken: symbol,
          amount: positive,
          slippageBps: slippage,
          schedule,
        };
  const optional = new Set(["slippageBps"]);

  const before = violations.length;
  for (const key of Object.keys(config)) {
    // Own keys only: `in` would take "constructor", "toString" or "__proto__" for settings.
    if (!Object.hasOwn(rules, key)) {
      violations.push({
        field: `config.${key}`,
        description: `is not a ${type} agent setting (use ${alternatives(Object.keys(rules))})`,
      });
    }
  }
  for (const [key, rule] of Object.entries(rules)) {
    const value = config[key];
    if (value === undefined && !optional.has(key)) {
      violations.push({ field: `config.${key}`, description: "is required" });
      continue;
    }
    const problem = await rule(value, key);
    if (problem !== undefined) violations.push({ field: `config.${key}`, description: problem });
  }
  // Cross-field rules, checked alongside the others so that one answer lists every bad field, and
  // only between valid values so that no field gets two violations.
  if (type === "transfer") {
    const { source, destination } = config;
    if (typeof destination === "string" && isAddress(destination) && source === destination) {
      violations.push({ field: "config.destination", description: "must differ from config.source" });
    }
  }
  const inputToken = type === "swap" ? await canonical(config.inputToken, lookupSymbol) : undefined;
  const outputToken = type === "swap" ? await canonical(config.outputToken, lookupSymbol) : undefined;
  if (inputToken !== undefined && inputToken === outputToken) {
    violations.push({ field: "config.outputToken", description: "must differ from config.inputToken" });
  }
  if (violations.length > before) return undefined;

  if (type === "transfer") {
    return {
      schedule: config.schedule as Schedule,
      config: { ...config, token: (await lookupSymbol(config.token as string)) as string },
    };
  }
  return {
    schedule: config.schedule as Schedule,
    config: {
      ...config,
      inputToken: inputToken as string,
      outputToken: outputToken as string,
      slippageBps: config.slippageBps ?? DEFAULT_SLIPPAGE_BPS,
    },
  };
}

/** The catalog spelling of a symbol value, or undefined when it is not a catalog symbol. */
async function canonical(
  value: JsonValue | undefined,
  lookupSymbol: SymbolLookup,
): Promise<string | undefined> {
  return typeof value === "string" ? lookupSymbol(value) : undefined;
}

import { isAddress } from "@solana/addresses";
import { ADDRESS_RULE } from "../domain/address-rule.ts";
import { alternatives, type FieldViolation, quote } from "../domain/errors.ts";
import type { JsonObject, JsonValue } from "./agent-store.ts";
import { SCHEDULES, type Schedule } from "./schedule.ts";

/** Looks a token symbol up in the catalog, case-insensitively, and returns its catalog spelling. */
export type SymbolLookup = (symbol: string) => Promise<string | undefined>;

/** The number of decimals of a catalog token, by its catalog symbol. */
export type DecimalsLookup = (symbol: string) => Promise<number | undefined>;

/** What CreateAgent learns of a catalog token's mint on the chain. */
export interface MintFacts {
  /** Its Token-2022 extensions, by kind (`TransferFeeConfig`, `TransferHook`, ...). */
  readonly extensions: readonly string[];
}

/** The catalog token's mint as the chain has it; undefined when it is not there (chain faults throw). */
export type MintCheck = (symbol: string) => Promise<MintFacts | undefined>;

export interface ValidConfig {
  readonly config: JsonObject;
  readonly schedule: Schedule;
  /** The decimals the amount was checked with (its token's), when the token list knows them. */
  readonly decimals: number | undefined;
}

/** Unknown settings named one by one; the rest are counted, so errors stay small. */
const MAX_UNKNOWN_REPORTED = 10;
/** Longest setting name echoed as it is. */
const MAX_FIELD_NAME_ECHO = 40;
const MAX_SLIPPAGE_BPS = 5000;

/** What a rule may look up. */
export interface RuleContext {
  readonly lookupSymbol: SymbolLookup;
}

/** Why `value` breaks the rule, or undefined when it keeps it. */
export type FieldRule = (value: JsonValue | undefined, context: RuleContext) => Promise<string | undefined>;

export const address: FieldRule = async (v) =>
  typeof v === "string" && isAddress(v) ? undefined : ADDRESS_RULE;
export const positive: FieldRule = async (v) => {
  if (typeof v === "number" && Number.isFinite(v) && v > 0) return undefined;
  // "1.5" in quotes is a different mistake from -1, and needs a different fix.
  if (typeof v === "string") return 'must be a JSON number such as 1.5 and not a string such as "1.5"';
  return "must be a finite number greater than 0";
};
export const symbol: FieldRule = async (v, { lookupSymbol }) =>
  typeof v === "string" && (await lookupSymbol(v)) !== undefined
    ? undefined
    : "must be the symbol of a token in the catalog (see GetTokenPrices)";
export const schedule: FieldRule = async (v) =>
  typeof v === "string" && (SCHEDULES as readonly string[]).includes(v)
    ? undefined
    : `must be one of ${alternatives(SCHEDULES)}`;
export const price: FieldRule = async (v) =>
  v === undefined || (typeof v === "number" && Number.isFinite(v) && v > 0)
    ? undefined
    : "must be a positive decimal number giving the price of the output token in units of the input token (output per input in whole tokens)";
export const slippage: FieldRule = async (v) =>
  v === undefined || (typeof v === "number" && Number.isInteger(v) && v >= 1 && v <= MAX_SLIPPAGE_BPS)
    ? undefined
    : `must be an integer from 1 to ${MAX_SLIPPAGE_BPS}`;

/** A kind's settings and their rules (AgentKind.settings): all that differs between kinds' configs. */
export interface KindConfigRules {
  /** Each setting's rule, in the order violations are reported. */
  readonly settings: Readonly<Record<string, FieldRule>>;
  /** Settings that may be left out (their rule then sees undefined). */
  readonly optional: ReadonlySet<string>;
  /**
   * Rules between settings, checked alongside the others so that one answer lists every bad
   * field, and only between valid values so that no field gets two violations.
   */
  crossField(config: JsonObject, context: RuleContext): Promise<FieldViolation[]>;
  /** The settings that name tokens, each of which must be a mint on the chain. */
  readonly tokenFields: readonly string[];
  /**
   * Token-2022 extensions a token of this type may not carry, and why: a swap's amount in must
   * arrive whole, which a transfer fee breaks, and a hook may run anything on every transfer
   * (Jupiter's own DCA refuses both).
   */
  readonly refusedExtensions: Readonly<Record<string, string>>;
  /** The catalog symbol of the token `amount` is counted in, when the config names a valid one. */
  amountToken(config: JsonObject, context: RuleContext): Promise<string | undefined>;
  /** The valid config as stored: catalog spellings of symbols, defaults applied. */
  normalise(config: JsonObject, context: RuleContext): Promise<JsonObject>;
}

/**
 * Validates an agent's config for its type and returns it normalised (catalog spelling of token
 * symbols, defaults applied). Every bad or unknown member yields its own violation, named by its
 * path (`config.amount`), so a caller fixes the whole request at once.
 */
export async function validateAgentConfig(
  kind: { readonly name: string; readonly settings: KindConfigRules },
  config: JsonObject,
  lookupSymbol: SymbolLookup,
  violations: FieldViolation[],
  lookupDecimals: DecimalsLookup = async () => undefined,
  mintOnChain?: MintCheck,
): Promise<ValidConfig | undefined> {
  const rules = kind.settings;
  const type = kind.name;
  const context: RuleContext = { lookupSymbol };

  const before = violations.length;
  // Own keys only: `in` would take "constructor", "toString" or "__proto__" for settings.
  const unknown = Object.keys(config).filter((key) => !Object.hasOwn(rules.settings, key));
  for (const key of unknown.slice(0, MAX_UNKNOWN_REPORTED)) {
    violations.push({
      // The caller's key is quoted short: a field name can be as long as any value.
      field: key.length <= MAX_FIELD_NAME_ECHO ? `config.${key}` : `config.${quote(key)}`,
      description: `is not a ${type} agent setting (use ${alternatives(Object.keys(rules.settings))})`,
    });
  }
  if (unknown.length > MAX_UNKNOWN_REPORTED) {
    violations.push({
      field: "config",
      description: `has ${unknown.length - MAX_UNKNOWN_REPORTED} more settings that are not ${type} agent settings`,
    });
  }
  for (const [key, rule] of Object.entries(rules.settings)) {
    const value = config[key];
    if (value === undefined && !rules.optional.has(key)) {
      violations.push({ field: `config.${key}`, description: "is required" });
      continue;
    }
    const problem = await rule(value, context);
    if (problem !== undefined) violations.push({ field: `config.${key}`, description: problem });
  }
  violations.push(...(await rules.crossField(config, context)));
  // The amount is in units of the token moved (a swap's input): at least its smallest unit, with
  // no more decimal places than it has, and within a u64 count of smallest units (as on chain).
  const { amount } = config;
  const moved = await rules.amountToken(config, context);
  const decimals = moved === undefined ? undefined : await lookupDecimals(moved);
  if (typeof amount === "number" && Number.isFinite(amount) && amount > 0 && decimals !== undefined) {
    const problem = amountProblem(amount, decimals, moved as string);
    if (problem !== undefined) violations.push({ field: "config.amount", description: problem });
  }
  if (violations.length > before) return undefined;
  // Last, and only for an otherwise valid config: it asks the chain (cached), and a chain that
  // cannot answer fails the call as unavailable rather than blaming the caller's token.
  if (mintOnChain !== undefined) {
    for (const field of rules.tokenFields) {
      const token = (await canonical(config[field], lookupSymbol)) as string;
      const mint = await mintOnChain(token);
      if (mint === undefined) {
        violations.push({
          field: `config.${field}`,
          description: `must be a token whose mint is on the chain, and ${token}'s mint is not`,
        });
        continue;
      }
      const refused = mint.extensions.filter((kind) => Object.hasOwn(rules.refusedExtensions, kind));
      if (refused.length > 0) {
        violations.push({
          field: `config.${field}`,
          description: `must not be a Token-2022 mint with a transfer fee or a transfer hook, and the mint of ${token} ${refused
            .map((kind) => `${rules.refusedExtensions[kind]} (${kind})`)
            .join(" and ")}`,
        });
      }
    }
    if (violations.length > before) return undefined;
  }
  return { schedule: config.schedule as Schedule, config: await rules.normalise(config, context), decimals };
}

/** Largest count of smallest units a token amount can have (a u64 on chain). */
const MAX_UNITS = 2 ** 64 - 1;

/** Why `amount` of a token with `decimals` decimals cannot be moved, or undefined when it can. */
export function amountProblem(amount: number, decimals: number, symbol: string): string | undefined {
  const units = amount * 10 ** decimals;
  const smallest = (10 ** -decimals).toFixed(decimals);
  // Float noise (0.1 * 10^6 = 100000.00000000001) is not a fraction of a unit.
  const whole = Math.abs(units - Math.round(units)) <= 1e-6 * Math.max(1, Math.abs(units) / 1e12);
  if (units < 1 - 1e-9 || !whole) {
    // Amounts are whole tokens (1.5 is one and a half): say so, and how fine they may be.
    return `must be in ${symbol} with at most ${decimals} decimal places (a multiple of ${smallest} and at least that), since ${symbol} has ${decimals} decimals`;
  }
  if (units > MAX_UNITS) return `must be at most ${(MAX_UNITS / 10 ** decimals).toPrecision(6)} ${symbol}`;
  return undefined;
}

/** The catalog spelling of a symbol value, or undefined when it is not a catalog symbol. */
export async function canonical(
  value: JsonValue | undefined,
  lookupSymbol: SymbolLookup,
): Promise<string | undefined> {
  return typeof value === "string" ? lookupSymbol(value) : undefined;
}

/**
 * JSON with u64 values, as Solana's JSON-RPC writes them: bare integers that may exceed 2^53.
 *
 * `parseJsonBigInts` reads every integer as a bigint, as @solana/kit's own HTTP transport does
 * (its `parseJsonWithBigInts`), so kit's typed client sees the same values from our transports as
 * from its own; kit then turns the fields it types as numbers back into numbers. It reads the
 * integer's source text through JSON.parse (the reviver's `context.source`), instead of kit's
 * character-by-character rewrite, which cost far more on large answers.
 */
export function parseJsonBigInts(text: string): unknown {
  return JSON.parse(text, reviveInteger);
}

/**
 * JSON as Solana's JSON-RPC server reads it: integers above 2^53 (lamports, slots) stay exact as
 * bigints; every other number stays a number.
 */
export function parseJsonExactIntegers(text: string): unknown {
  // Text without 16 digits in a row holds no integer beyond 2^53: the plain parse, without a
  // reviver, is several times faster.
  return LONG_DIGITS.test(text) ? JSON.parse(text, reviveLargeInteger) : JSON.parse(text);
}

const LONG_DIGITS = /\d{16}/;

/** JSON text with bigints written as bare integers. */
export function stringifyJsonBigInts(value: unknown): string {
  return JSON.stringify(value, bigintToRaw);
}

const INTEGER = /^-?\d+$/;
/** An integer as kit reads it: no fraction and no negative exponent ("1e3" is 1000n). */
const KIT_INTEGER = /^(-?\d+)(?:[eE]\+?(\d{1,3}))?$/;

function reviveInteger(this: unknown, _key: string, value: unknown, context?: { source?: string }): unknown {
  if (typeof value !== "number" || context?.source === undefined) return value;
  const match = KIT_INTEGER.exec(context.source);
  if (match === null) return value;
  const mantissa = BigInt(match[1] as string);
  return match[2] === undefined ? mantissa : mantissa * 10n ** BigInt(match[2]);
}

function reviveLargeInteger(
  this: unknown,
  _key: string,
  value: unknown,
  context?: { source?: string },
): unknown {
  if (
    typeof value === "number" &&
    !Number.isSafeInteger(value) &&
    context?.source !== undefined &&
    INTEGER.test(context.source)
  ) {
    return BigInt(context.source);
  }
  return value;
}

/** ES2025's JSON.rawJSON (Node 21+), which TypeScript's ES2024 library does not declare. */
const rawJSON = (JSON as unknown as { rawJSON(text: string): unknown }).rawJSON;

function bigintToRaw(_key: string, value: unknown): unknown {
  return typeof value === "bigint" ? rawJSON(value.toString()) : value;
}

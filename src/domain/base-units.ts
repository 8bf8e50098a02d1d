/**
 * UI units (what people type: 1.1 USDC) to base units (what the token program counts: 1100000),
 * exactly. The decimal text of the number is split, not multiplied: 1.1 * 10^6 is 1100000.0000000002
 * in floating point, and 0.29 * 10^6 is 289999.99999999994, which truncation would make 289999.
 * Callers validate first that the amount has no more decimal places than the token (amountProblem).
 */
export function baseUnits(amount: number, decimals: number): bigint {
  const [whole, fraction = ""] = amount.toFixed(decimals).split(".");
  return BigInt(`${whole}${fraction}`);
}

import type { FieldViolation } from "./errors.ts";

/** The page size used when a request leaves `limit` out (or sends 0, proto3's "not set"). */
export const DEFAULT_PAGE_LIMIT = 10;
/** The largest page a caller may ask for. */
export const MAX_PAGE_LIMIT = 100;

/**
 * Applies the shared paging rule of the seed: 0 means the default, 1..100 is allowed, anything else
 * is a violation naming the bound. Returns the limit to apply.
 */
export function pageLimit(limit: number, violations: FieldViolation[], field = "limit"): number {
  if (limit === 0) return DEFAULT_PAGE_LIMIT;
  if (!Number.isInteger(limit) || limit < 0 || limit > MAX_PAGE_LIMIT) {
    violations.push({
      field,
      description: `must be between 1 and ${MAX_PAGE_LIMIT} (0 or omitted means ${DEFAULT_PAGE_LIMIT}) but is ${limit}`,
    });
  }
  return limit;
}

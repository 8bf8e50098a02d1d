import type { FieldViolation } from "./errors.ts";

/** The page size used when a request leaves `limit` out (or sends 0, proto3's "not set"). */
export const DEFAULT_PAGE_LIMIT = 10;
/** The largest page a caller may ask for. */
export const MAX_PAGE_LIMIT = 100;

/**
 * The paging rule in words, for a `limit` that is not even an integer (`?limit=abc` on a REST
 * path): the bounds a caller must keep to, not those of the int32 the field happens to be.
 */
export const PAGE_LIMIT_RULE = `must be an integer from 1 to ${MAX_PAGE_LIMIT} (0 or omitted means ${DEFAULT_PAGE_LIMIT})`;

/**
 * Applies the shared paging rule of the seed: 0 means the default, 1..100 is allowed, anything else
 * is a violation naming the bound. Returns the limit to apply.
 */
export function pageLimit(limit: number, violations: FieldViolation[], field = "limit"): number {
  if (limit === 0) return DEFAULT_PAGE_LIMIT;
  if (!Number.isInteger(limit) || limit < 0 || limit > MAX_PAGE_LIMIT) {
    violations.push({
      field,
      // One wording of the rule, whether the value is not an integer at all or out of bounds (no
      // comma: grpc-js leaves a reserved character percent-encoded in the message).
      description: `${PAGE_LIMIT_RULE} but is ${limit}`,
    });
  }
  return limit;
}

/** Retry-After as milliseconds: delay-seconds or an HTTP date (RFC 9110 section 10.2.3). */
export function retryAfterOf(value: string | null, now = Date.now()): number | undefined {
  if (value === null) return undefined;
  const text = value.trim();
  if (/^\d{1,9}$/.test(text)) return Number(text) * 1000;
  const at = Date.parse(text);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

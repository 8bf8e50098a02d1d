/**
 * The reference price a trigger is judged by, from what several price sources said of one token:
 * the median of the fresh samples, so that one source's bad quote cannot fire a trigger while the
 * others disagree (with two sources it moves the reference half as far; with three or more, not
 * past the others at all). With one fresh source it is that source's price. A sample without a
 * usable price or time, too old, or from the future is left out, and the answer says why when
 * none is left.
 */

export interface PriceSample {
  readonly source: string;
  /** Undefined: the source has no price for the token. */
  readonly priceUsd: number | undefined;
  /** When the source's price was true; undefined: the source did not say. */
  readonly atMs: number | undefined;
}

export interface SourcePrice {
  readonly source: string;
  readonly priceUsd: number;
  readonly atMs: number;
}

export type ReferencePrice =
  | {
      readonly ok: true;
      readonly priceUsd: number;
      /** The oldest time among the samples used: the reference is no fresher than its stalest part. */
      readonly atMs: number;
      /** The samples used, one per source, in the order given. */
      readonly sources: readonly SourcePrice[];
    }
  | { readonly ok: false; readonly reason: string };

export interface ReferencePriceOptions {
  readonly nowMs: number;
  /** How old a sample may be and still count. */
  readonly ttlMs: number;
  /** How far ahead of nowMs a sample's time may be (the sources' clocks are not ours); DEFAULT_AHEAD_MS. */
  readonly aheadMs?: number | undefined;
}

/** Clock skew forgiven a source by default: more than this ahead of our clock is not a time to trust. */
export const DEFAULT_AHEAD_MS = 2_000;

export function referencePrice(
  samples: readonly PriceSample[],
  options: ReferencePriceOptions,
): ReferencePrice {
  const { nowMs, ttlMs, aheadMs = DEFAULT_AHEAD_MS } = options;
  if (!Number.isFinite(nowMs)) throw new RangeError(`nowMs must be finite, not ${nowMs}`);
  if (!(Number.isFinite(ttlMs) && ttlMs >= 0)) throw new RangeError(`ttlMs must be >= 0, not ${ttlMs}`);
  if (!(Number.isFinite(aheadMs) && aheadMs >= 0))
    throw new RangeError(`aheadMs must be >= 0, not ${aheadMs}`);
  const kept = new Map<string, SourcePrice>();
  const dropped: string[] = [];
  for (const { source, priceUsd, atMs } of samples) {
    const problem = problemOf(source, priceUsd, atMs, nowMs, ttlMs, aheadMs);
    if (problem !== undefined) {
      dropped.push(problem);
      continue;
    }
    // One vote per source: a source listed twice keeps its newer sample, never both.
    const price = { source, priceUsd: priceUsd as number, atMs: atMs as number };
    const earlier = kept.get(source);
    if (earlier === undefined || price.atMs >= earlier.atMs) kept.set(source, price);
  }
  if (kept.size === 0) {
    return {
      ok: false,
      reason: `no fresh price: ${dropped.length === 0 ? "no source gave one" : dropped.join("; ")}`,
    };
  }
  const sources = [...kept.values()];
  const prices = sources.map((s) => s.priceUsd).sort((a, b) => a - b);
  const middle = prices.length >> 1;
  const priceUsd =
    prices.length % 2 === 1
      ? (prices[middle] as number)
      : ((prices[middle - 1] as number) + (prices[middle] as number)) / 2;
  const atMs = Math.min(...sources.map((s) => s.atMs));
  return { ok: true, priceUsd, atMs, sources };
}

/** Why a sample cannot count, in words for the reason; undefined when it can. */
function problemOf(
  source: string,
  priceUsd: number | undefined,
  atMs: number | undefined,
  nowMs: number,
  ttlMs: number,
  aheadMs: number,
): string | undefined {
  if (priceUsd === undefined) return `${source} has no price`;
  if (!(Number.isFinite(priceUsd) && priceUsd > 0))
    return `${source}'s price ${priceUsd} is not a positive number`;
  if (atMs === undefined || !Number.isFinite(atMs)) return `${source}'s price has no time`;
  if (atMs < nowMs - ttlMs) return `${source}'s is ${seconds(nowMs - atMs)} old`;
  if (atMs > nowMs + aheadMs) return `${source}'s is ${seconds(atMs - nowMs)} ahead of this clock`;
  return undefined;
}

/** "45 s", "2.5 s": whole seconds from ten on, tenths below. */
function seconds(ms: number): string {
  return `${ms >= 10_000 ? Math.round(ms / 1000) : (ms / 1000).toFixed(1)} s`;
}

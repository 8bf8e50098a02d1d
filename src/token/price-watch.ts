import { ResourceExhaustedError } from "../domain/errors.ts";
import type { PriceSource, TokenPrice } from "./token-source.ts";

export interface PriceSubscription {
  /** The current prices of the subscription's mints, in the order asked. */
  readonly initial: readonly TokenPrice[];
  close(): void;
}

export interface PriceWatch {
  /**
   * The current prices of `mints` (through the source, so its cache answers), and from then on
   * `onChange` gets the entries of these mints that changed after each poll; `onError` gets a
   * failed poll's error (the source's UnavailableError).
   */
  subscribe(
    mints: readonly string[],
    onChange: (changed: readonly TokenPrice[]) => void,
    onError: (error: unknown) => void,
  ): Promise<PriceSubscription>;
  /** For leak checks: subscriptions open, distinct mints watched, whether the poll timer exists. */
  stats(): { subscriptions: number; mints: number; timer: boolean };
  close(): void;
}

interface Subscriber {
  readonly mints: readonly string[];
  readonly onChange: (changed: readonly TokenPrice[]) => void;
  readonly onError: (error: unknown) => void;
}

/** Distinct mints one process watches at once. */
export const MAX_WATCHED_MINTS = 1_000;

/**
 * One poll of the price source per interval for every price watcher of the process, however
 * many there are: each poll asks the source for every watched mint at once (the source chunks and
 * caches: with Jupiter, it asks upstream at most once per PRICE_TTL_MS per chunk), compares each
 * entry with the last one seen, and hands each subscriber the changed entries of its own mints.
 * Subscribers are indexed by mint, so a poll costs work in proportion to what changed. The timer
 * runs only while someone watches, and polls never overlap.
 */
export function createPriceWatch(options: {
  readonly prices: PriceSource;
  readonly intervalMs: number;
  readonly onError?: (error: unknown) => void;
}): PriceWatch {
  const { prices, intervalMs } = options;
  /** The last entry seen of each watched mint, and who watches it. */
  const tracked = new Map<string, { price: TokenPrice | undefined; subscribers: Set<Subscriber> }>();
  const subscribers = new Set<Subscriber>();
  let timer: NodeJS.Timeout | undefined;
  let polling = false;

  const differs = (a: TokenPrice | undefined, b: TokenPrice) =>
    a === undefined ||
    a.price !== b.price ||
    a.change24h !== b.change24h ||
    a.unpriced !== b.unpriced ||
    a.slot !== b.slot;

  const poll = async () => {
    if (polling || tracked.size === 0) return;
    polling = true;
    try {
      const fresh = await prices.pricesOf([...tracked.keys()]);
      const changes = new Map<Subscriber, TokenPrice[]>();
      for (const entry of fresh) {
        const track = tracked.get(entry.mint);
        if (track === undefined || !differs(track.price, entry)) continue;
        track.price = entry;
        for (const s of track.subscribers) {
          const list = changes.get(s);
          if (list === undefined) changes.set(s, [entry]);
          else list.push(entry);
        }
      }
      for (const [s, changed] of changes) if (subscribers.has(s)) s.onChange(changed);
    } catch (error) {
      options.onError?.(error);
      for (const s of subscribers) s.onError(error);
    } finally {
      polling = false;
    }
  };

  const release = (s: Subscriber) => {
    if (!subscribers.delete(s)) return;
    for (const mint of s.mints) {
      const track = tracked.get(mint);
      track?.subscribers.delete(s);
      if (track?.subscribers.size === 0) tracked.delete(mint);
    }
    if (subscribers.size === 0 && timer !== undefined) {
      clearInterval(timer);
      timer = undefined;
    }
  };

  return {
    async subscribe(mints, onChange, onError) {
      const unique = [...new Set(mints)];
      const added = unique.filter((m) => !tracked.has(m)).length;
      if (tracked.size + added > MAX_WATCHED_MINTS) {
        throw new ResourceExhaustedError(
          `this server watches ${tracked.size} mints already and at most ${MAX_WATCHED_MINTS}; try again later`,
        );
      }
      const fetched = await prices.pricesOf(unique);
      const s: Subscriber = { mints: unique, onChange, onError };
      const initial = fetched.map((entry) => {
        const track = tracked.get(entry.mint);
        if (track === undefined) {
          tracked.set(entry.mint, { price: entry, subscribers: new Set([s]) });
          return entry;
        }
        track.subscribers.add(s);
        // What others were last sent, so this subscriber never starts behind them.
        if (track.price === undefined) track.price = entry;
        return track.price;
      });
      subscribers.add(s);
      timer ??= setInterval(() => void poll(), intervalMs).unref();
      return { initial, close: () => release(s) };
    },
    stats: () => ({ subscriptions: subscribers.size, mints: tracked.size, timer: timer !== undefined }),
    close() {
      for (const s of [...subscribers]) release(s);
    },
  };
}

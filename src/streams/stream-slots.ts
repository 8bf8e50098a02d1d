import { ResourceExhaustedError } from "../domain/errors.ts";

export interface StreamSlots {
  /**
   * Takes one of `key`'s stream slots; throws ResourceExhaustedError when the key holds its
   * limit already. The returned function gives the slot back (once, however often it is called).
   */
  acquire(key: string): () => void;
  /** For leak checks: streams held, and keys holding any. */
  stats(): { streams: number; keys: number };
}

/**
 * STREAM_MAX_PER_KEY: streams stay open for hours, so each caller (an API key, or an address
 * for callers without one) may hold a bounded number at once, and one caller cannot take every
 * stream the process can serve.
 */
export function createStreamSlots(options: { readonly maxPerKey: number }): StreamSlots {
  const held = new Map<string, number>();
  let streams = 0;
  return {
    acquire(key) {
      const count = held.get(key) ?? 0;
      if (count >= options.maxPerKey) {
        throw new ResourceExhaustedError(
          `this caller holds ${count} streams already, the most allowed (STREAM_MAX_PER_KEY); close one first`,
        );
      }
      held.set(key, count + 1);
      streams++;
      let released = false;
      return () => {
        if (released) return;
        released = true;
        streams--;
        const now = (held.get(key) ?? 1) - 1;
        if (now === 0) held.delete(key);
        else held.set(key, now);
      };
    },
    stats: () => ({ streams, keys: held.size }),
  };
}

/**
 * What this replica last saw of each watched token's reference price, or why it saw none: what
 * GetAgent shows of a trigger order (its last reference price) and its notice while no fresh price
 * can be had. Per process: each replica watches for itself, and says what it saw.
 */
export interface Sighting {
  readonly priceUsd: number;
  /** When the price was observed (the price's own time), epoch ms. */
  readonly atMs: number;
}

export interface TriggerSightings {
  seen(token: string, sighting: Sighting): void;
  /** No fresh price of `token` could be had, for `reason`. */
  missed(token: string, reason: string): void;
  lastOf(token: string): Sighting | undefined;
  /** Why the last look at `token` found no fresh price, or undefined when it found one. */
  problemOf(token: string): string | undefined;
  /** Forgets tokens no order watches any more. */
  keepOnly(tokens: ReadonlySet<string>): void;
}

export function createTriggerSightings(): TriggerSightings {
  const last = new Map<string, Sighting>();
  const problems = new Map<string, string>();
  return {
    seen(token, sighting) {
      last.set(token, sighting);
      problems.delete(token);
    },
    missed(token, reason) {
      problems.set(token, reason);
    },
    lastOf: (token) => last.get(token),
    problemOf: (token) => problems.get(token),
    keepOnly(tokens) {
      for (const token of last.keys()) if (!tokens.has(token)) last.delete(token);
      for (const token of problems.keys()) if (!tokens.has(token)) problems.delete(token);
    },
  };
}

/**
 * The trigger book's rules written the plainest way: every observation looks at every leg in the
 * order they were added. The tests hold the real book (src/kinds/trigger/trigger-book.ts) to the
 * same firings on random walks, and the bench (scripts/bench/trigger-book.ts) measures the book
 * against it: what the real book's index saves.
 */
import type {
  Firing,
  PriceObservation,
  TriggerBook,
  TriggerBookOptions,
  TriggerLeg,
  TriggerLegName,
} from "../../src/kinds/trigger/trigger-book.ts";

const LEG_NAMES: readonly TriggerLegName[] = ["single", "take_profit", "stop_loss"];

interface NaiveLeg {
  readonly leg: TriggerLeg;
  streak: PriceObservation[];
}

export function createNaiveTriggerBook(options: TriggerBookOptions): TriggerBook {
  const { confirmations, holdMs } = options;
  /** By `agentId leg`, in the order of adding (a replaced leg is deleted first, so it moves to the end). */
  const legs = new Map<string, NaiveLeg>();
  const keyOf = (leg: TriggerLeg) => `${leg.agentId} ${leg.leg}`;
  // By name, not by a walk: what a firing cancels costs the plain book no more than the real one.
  const remove = (agentId: string) => {
    for (const name of LEG_NAMES) legs.delete(`${agentId} ${name}`);
  };
  return {
    add(leg) {
      legs.delete(keyOf(leg));
      legs.set(keyOf(leg), { leg: { ...leg }, streak: [] });
    },
    remove,
    observe(token, observation) {
      const { priceUsd, atMs } = observation;
      if (!(Number.isFinite(priceUsd) && priceUsd > 0 && Number.isFinite(atMs))) return [];
      const seen = { priceUsd, atMs };
      const ready: NaiveLeg[] = [];
      for (const entry of legs.values()) {
        if (entry.leg.token !== token) continue;
        const holds =
          entry.leg.condition === "above" ? priceUsd >= entry.leg.priceUsd : priceUsd <= entry.leg.priceUsd;
        if (!holds) {
          entry.streak = [];
          continue;
        }
        const last = entry.streak.at(-1);
        if (last === undefined || (atMs > last.atMs && atMs - last.atMs >= holdMs)) entry.streak.push(seen);
        if (entry.streak.length >= confirmations) ready.push(entry);
      }
      const firings: Firing[] = [];
      const fired = new Set<string>();
      for (const entry of ready) {
        if (fired.has(entry.leg.agentId)) continue;
        fired.add(entry.leg.agentId);
        firings.push({ leg: entry.leg, observations: [...entry.streak] });
      }
      for (const agentId of fired) remove(agentId);
      return firings;
    },
    has: (agentId) => [...legs.values()].some((entry) => entry.leg.agentId === agentId),
    tokens: () => [...new Set([...legs.values()].map((entry) => entry.leg.token))],
    size: () => legs.size,
  };
}

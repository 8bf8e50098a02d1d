/**
 * The open legs of trigger agents (limit, stop-loss, take-profit, OCO), indexed by token and
 * level, and what a price observation fires: a leg fires once its condition held on
 * `confirmations` observations of its token in a row, each at least `holdMs` after the last one
 * counted, so that one spike (or one bad quote) fires nothing. A firing cancels every other leg of
 * its agent (one cancels the other).
 *
 * Each observation costs O(log n + k), n the token's legs and k the legs that hold at its price or
 * had a streak going: never a walk over every leg. Per token, each side (above-legs, below-legs)
 * is one array sorted so that the legs holding at a price are its tail (above-legs by level
 * descending, below-legs ascending), found by binary search: a tail rather than a prefix, so that
 * dropping the legs that fired moves only the tail, never the whole array. The legs with a streak
 * going are in a set of their own, so that a price leaving their level resets them without a
 * search. A removed leg (a cancelled OCO leg, an agent removed) is only marked dead where it sits;
 * a walk that passes it drops it, and the next add or remove on a side whose dead outnumber its
 * living sweeps the side once, which the removals before it pay for.
 *
 * Why sorted arrays and not a library's ordered map (sorted-btree's B+ tree, @js-sdsl/ordered-map's
 * red-black tree): an observation needs one binary search and a walk of the holding legs, which on
 * an array is a run of adjacent slots and on a tree is pointer chasing; the trees win only at adding,
 * which here is a splice (a memmove of one token's side) and happens once per leg against the
 * thousands of observations a leg sits through. scripts/bench/trigger-book.ts measures the book.
 */

export type TriggerCondition = "above" | "below";
export type TriggerLegName = "single" | "take_profit" | "stop_loss";

export interface TriggerLeg {
  readonly agentId: string;
  /** An agent has at most one leg of each name: two (take_profit, stop_loss) make an OCO pair. */
  readonly leg: TriggerLegName;
  /** What the observations of `observe` are keyed by (a mint). */
  readonly token: string;
  readonly condition: TriggerCondition;
  /** The level: the condition holds at prices >= it (above) or <= it (below). */
  readonly priceUsd: number;
}

export interface PriceObservation {
  readonly priceUsd: number;
  /**
   * When the price was true (the source's time, not when it was read): a repeat of one cached
   * price has the same.
   */
  readonly atMs: number;
}

export interface Firing {
  readonly leg: TriggerLeg;
  /** The confirming observations, oldest first; the last one is the reference price at firing. */
  readonly observations: readonly PriceObservation[];
}

export interface TriggerBook {
  /**
   * Adds a leg, replacing the agent's leg of the same name if there is one: the new leg starts
   * without a streak and counts as added now. Throws a RangeError for a leg that is not valid.
   */
  add(leg: TriggerLeg): void;
  /** Removes every leg of the agent. */
  remove(agentId: string): void;
  /**
   * What one observation of `token` fires, in the order the legs were added: at most one leg per
   * agent, and every leg of a fired agent leaves the book. An observation whose price is not a
   * positive finite number, or whose time is not finite, is ignored.
   */
  observe(token: string, observation: PriceObservation): Firing[];
  has(agentId: string): boolean;
  /** The tokens with at least one leg. */
  tokens(): string[];
  /** Legs in the book. */
  size(): number;
}

export interface TriggerBookOptions {
  /**
   * Observations in a row, each holdMs after the last one counted, on which a leg must hold to
   * fire (an integer >= 1).
   */
  readonly confirmations: number;
  /** The least time between two counted observations (>= 0; a repeat of the same time never counts). */
  readonly holdMs: number;
  /**
   * Hears, once per observation of a token with legs, how many legs it looked at (the binary
   * searches' steps included): what a metric of the book's work reads, and how the tests hold observe to
   * O(log n + k) without timing it.
   */
  readonly onExamined?: ((legs: number) => void) | undefined;
}

const CONDITIONS: ReadonlySet<string> = new Set<TriggerCondition>(["above", "below"]);
const LEG_NAMES: ReadonlySet<string> = new Set<TriggerLegName>(["single", "take_profit", "stop_loss"]);

interface Entry {
  readonly leg: TriggerLeg;
  /** The order of adding: of two legs of one agent that would fire at once, the first added fires. */
  readonly seq: number;
  /** The leg's place on its side: -level for above-legs, level for below-legs (see keyOf). */
  readonly key: number;
  readonly side: Side;
  readonly legs: TokenLegs;
  dead: boolean;
  /** The observations counted so far, oldest first; empty: no streak. */
  streak: PriceObservation[];
}

/** One side of a token: its legs by key ascending, so that those holding at a price are the tail. */
interface Side {
  entries: Entry[];
  live: number;
  /** Entries marked dead and still in `entries`. */
  dead: number;
}

interface TokenLegs {
  readonly token: string;
  readonly above: Side;
  readonly below: Side;
  /** The legs with a streak going: an observation that breaks their condition resets them. */
  readonly streaking: Set<Entry>;
}

/**
 * Where a level sits on its side, ascending: above-legs by level descending, below-legs by level
 * ascending. A condition holds at price p exactly when keyOf(condition, level) >= keyOf(condition, p),
 * so the holding legs of a side are the tail from the first key >= keyOf(condition, p).
 */
function keyOf(condition: TriggerCondition, priceUsd: number): number {
  return condition === "above" ? -priceUsd : priceUsd;
}

function holdsAt(leg: TriggerLeg, priceUsd: number): boolean {
  return leg.condition === "above" ? priceUsd >= leg.priceUsd : priceUsd <= leg.priceUsd;
}

export function createTriggerBook(options: TriggerBookOptions): TriggerBook {
  const { confirmations, holdMs, onExamined } = options;
  if (!(Number.isSafeInteger(confirmations) && confirmations >= 1)) {
    throw new RangeError(`confirmations must be an integer >= 1, not ${confirmations}`);
  }
  if (!(Number.isFinite(holdMs) && holdMs >= 0)) {
    throw new RangeError(`holdMs must be a finite number >= 0, not ${holdMs}`);
  }
  const byToken = new Map<string, TokenLegs>();
  const byAgent = new Map<string, Map<TriggerLegName, Entry>>();
  const rules = { confirmations, holdMs };
  let seq = 0;
  let live = 0;

  /** Marks a leg dead where it sits: removing it from its array is left to a walk or a sweep. */
  const kill = (entry: Entry) => {
    entry.dead = true;
    entry.streak = [];
    entry.side.live--;
    entry.side.dead++;
    entry.legs.streaking.delete(entry);
    live--;
    if (entry.legs.above.live + entry.legs.below.live === 0) byToken.delete(entry.legs.token);
  };

  const killAgent = (agentId: string): Entry[] => {
    const entries = [...(byAgent.get(agentId)?.values() ?? [])];
    byAgent.delete(agentId);
    for (const entry of entries) kill(entry);
    return entries;
  };

  return {
    add(leg) {
      const kept = checkedLeg(leg);
      const previous = byAgent.get(kept.agentId)?.get(kept.leg);
      if (previous !== undefined) {
        kill(previous);
        sweepIfMostlyDead(previous.side);
      }
      let legs = byToken.get(kept.token);
      if (legs === undefined) {
        legs = { token: kept.token, above: newSide(), below: newSide(), streaking: new Set() };
        byToken.set(kept.token, legs);
      }
      const side = kept.condition === "above" ? legs.above : legs.below;
      // What observations left dead (the cancelled legs of fired agents) goes with the next add.
      sweepIfMostlyDead(side);
      const entry: Entry = {
        leg: kept,
        seq: seq++,
        key: keyOf(kept.condition, kept.priceUsd),
        side,
        legs,
        dead: false,
        streak: [],
      };
      // After the equal keys already there: the order among equals is the order of adding.
      side.entries.splice(firstAfter(side.entries, entry.key), 0, entry);
      side.live++;
      live++;
      let agentLegs = byAgent.get(kept.agentId);
      if (agentLegs === undefined) {
        agentLegs = new Map();
        byAgent.set(kept.agentId, agentLegs);
      }
      agentLegs.set(kept.leg, entry);
    },

    remove(agentId) {
      for (const entry of killAgent(agentId)) sweepIfMostlyDead(entry.side);
    },

    observe(token, observation) {
      const { priceUsd, atMs } = observation;
      if (!(Number.isFinite(priceUsd) && priceUsd > 0 && Number.isFinite(atMs))) return [];
      const legs = byToken.get(token);
      if (legs === undefined) return [];
      // A copy: what a firing hands back is what was seen, whatever the caller does with its object later.
      const seen: PriceObservation = Object.freeze({ priceUsd, atMs });
      let examined = legs.streaking.size;
      for (const entry of legs.streaking) {
        if (!holdsAt(entry.leg, priceUsd)) {
          entry.streak = [];
          legs.streaking.delete(entry);
        }
      }
      const ready: Entry[] = [];
      const aboveFrom = firstAtOrAfter(legs.above.entries, keyOf("above", priceUsd));
      const belowFrom = firstAtOrAfter(legs.below.entries, keyOf("below", priceUsd));
      examined +=
        walkTail(legs.above, aboveFrom, seen, rules, ready) +
        walkTail(legs.below, belowFrom, seen, rules, ready);
      const firings: Firing[] = [];
      // In the order of adding, not of the walk (above-legs, then below-legs): of an agent's two
      // legs ready at once, the first added fires.
      if (ready.length > 1) ready.sort((a, b) => a.seq - b.seq);
      for (const entry of ready) {
        if (entry.dead) continue; // its agent fired on another leg a moment ago
        firings.push({ leg: entry.leg, observations: Object.freeze([...entry.streak]) });
        killAgent(entry.leg.agentId);
      }
      // The fired legs, and any dead ones the walk passed, leave the tails; the rest of a side is not moved.
      if (legs.above.dead > 0) dropDeadFrom(legs.above, aboveFrom);
      if (legs.below.dead > 0) dropDeadFrom(legs.below, belowFrom);
      onExamined?.(examined);
      return firings;
    },

    has: (agentId) => byAgent.has(agentId),
    tokens: () => [...byToken.keys()],
    size: () => live,
  };
}

/** A frozen copy of a valid leg, so that no later change of the caller's object can unsort a side. */
function checkedLeg(leg: TriggerLeg): TriggerLeg {
  const { agentId, leg: name, token, condition, priceUsd } = leg;
  if (typeof agentId !== "string" || agentId === "") throw new RangeError("a leg needs an agentId");
  if (!LEG_NAMES.has(name)) throw new RangeError(`a leg is single, take_profit or stop_loss, not ${name}`);
  if (typeof token !== "string" || token === "") throw new RangeError("a leg needs a token");
  if (!CONDITIONS.has(condition))
    throw new RangeError(`a leg's condition is above or below, not ${condition}`);
  if (!(Number.isFinite(priceUsd) && priceUsd > 0)) {
    throw new RangeError(`a leg's priceUsd must be a positive finite number, not ${priceUsd}`);
  }
  return Object.freeze({ agentId, leg: name, token, condition, priceUsd });
}

/**
 * Counts `seen` for the living legs of a side's holding tail (from `from` on), adding those it
 * fires to `ready`; returns the legs it looked at, the binary search's steps included.
 */
function walkTail(
  side: Side,
  from: number,
  seen: PriceObservation,
  rules: { readonly confirmations: number; readonly holdMs: number },
  ready: Entry[],
): number {
  const { entries } = side;
  for (let i = from; i < entries.length; i++) {
    const entry = entries[i] as Entry;
    if (!entry.dead && countHolding(entry, seen, rules.holdMs) >= rules.confirmations) ready.push(entry);
  }
  return Math.ceil(Math.log2(entries.length + 1)) + entries.length - from;
}

/**
 * Counts an observation at which the entry's condition holds, if it comes holdMs after the last
 * one counted; one that comes sooner (or is the same cached price again) neither counts nor
 * resets: the price has not been seen to stay, nor to leave. Returns the streak's length.
 */
function countHolding(entry: Entry, observation: PriceObservation, holdMs: number): number {
  const last = entry.streak.at(-1);
  if (last === undefined) {
    entry.streak = [observation];
    entry.legs.streaking.add(entry);
  } else if (observation.atMs > last.atMs && observation.atMs - last.atMs >= holdMs) {
    entry.streak.push(observation);
  }
  return entry.streak.length;
}

function newSide(): Side {
  return { entries: [], live: 0, dead: 0 };
}

/** The first index whose key is >= `key` (entries by key ascending), by binary search. */
function firstAtOrAfter(entries: readonly Entry[], key: number): number {
  let low = 0;
  let high = entries.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if ((entries[middle] as Entry).key >= key) high = middle;
    else low = middle + 1;
  }
  return low;
}

/** The first index whose key is > `key`: where a new entry goes after the equal ones. */
function firstAfter(entries: readonly Entry[], key: number): number {
  let low = 0;
  let high = entries.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if ((entries[middle] as Entry).key > key) high = middle;
    else low = middle + 1;
  }
  return low;
}

/** Drops the dead entries of `side` from index `from` on, moving only that tail. */
function dropDeadFrom(side: Side, from: number) {
  const { entries } = side;
  let kept = from;
  for (let i = from; i < entries.length; i++) {
    const entry = entries[i] as Entry;
    if (entry.dead) side.dead--;
    else entries[kept++] = entry;
  }
  entries.length = kept;
}

/** Sweeps a side once its dead outnumber its living: each sweep is paid for by the removals before it. */
function sweepIfMostlyDead(side: Side) {
  if (side.dead > side.live) dropDeadFrom(side, 0);
}

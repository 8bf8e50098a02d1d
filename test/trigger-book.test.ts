/**
 * The trigger book and the reference price, alone: when a leg fires (a level held on enough
 * observations, far enough apart), what resets it and what does not, one-cancels-the-other, that
 * an observation looks only at the legs near its price, and the median of the price sources.
 */
import { describe, expect, it } from "vitest";
import {
  createTriggerBook,
  type PriceObservation,
  type TriggerBook,
  type TriggerLeg,
} from "../src/kinds/trigger/trigger-book.ts";
import { referencePrice } from "../src/kinds/trigger/trigger-reference.ts";
import { createNaiveTriggerBook } from "./support/naive-trigger-book.ts";
import { prng } from "./support/prng.ts";

const SOL = "So11111111111111111111111111111111111111112";
const BONK = "DezXAZ8z7PnrnRJjz3wXBoRgixCa6xjnB7YaB1pPB263";

const at = (atMs: number, priceUsd: number): PriceObservation => ({ priceUsd, atMs });

function leg(agentId: string, fields: Partial<TriggerLeg> = {}): TriggerLeg {
  return { agentId, leg: "single", token: SOL, condition: "above", priceUsd: 100, ...fields };
}

/** An OCO pair of one agent: take-profit above `tp`, stop-loss below `sl`. */
function oco(book: TriggerBook, agentId: string, tp: number, sl: number, token = SOL) {
  book.add(leg(agentId, { leg: "take_profit", condition: "above", priceUsd: tp, token }));
  book.add(leg(agentId, { leg: "stop_loss", condition: "below", priceUsd: sl, token }));
}

/** The observations of `token`, one after another: the firings of each. */
function feed(book: TriggerBook, observations: PriceObservation[], token = SOL) {
  return observations.map((o) => book.observe(token, o));
}

const fired = (firings: { leg: TriggerLeg }[]) => firings.map((f) => `${f.leg.agentId}/${f.leg.leg}`);

describe("trigger book: when a leg fires", () => {
  it("with one confirmation, fires on the first observation at or through the level, above and below", () => {
    const book = createTriggerBook({ confirmations: 1, holdMs: 2_000 });
    book.add(leg("up", { condition: "above", priceUsd: 110 }));
    book.add(leg("down", { condition: "below", priceUsd: 90 }));
    expect(book.observe(SOL, at(0, 109.99))).toEqual([]);
    const up = book.observe(SOL, at(1, 110));
    expect(up).toEqual([
      { leg: leg("up", { condition: "above", priceUsd: 110 }), observations: [at(1, 110)] },
    ]);
    expect(fired(book.observe(SOL, at(2, 90)))).toEqual(["down/single"]);
    expect(book.size()).toBe(0);
  });

  it("fires on two confirmations 2 s apart, handing back both, the last being the reference", () => {
    const book = createTriggerBook({ confirmations: 2, holdMs: 2_000 });
    book.add(leg("a", { priceUsd: 110 }));
    expect(book.observe(SOL, at(10_000, 111))).toEqual([]);
    const [firing] = book.observe(SOL, at(12_000, 112));
    expect(firing?.leg.agentId).toBe("a");
    expect(firing?.observations).toEqual([at(10_000, 111), at(12_000, 112)]);
    expect(firing?.observations.at(-1)?.priceUsd).toBe(112);
    expect(book.has("a")).toBe(false);
  });

  it("does not fire on one spike followed by an observation back under the level", () => {
    const book = createTriggerBook({ confirmations: 2, holdMs: 2_000 });
    book.add(leg("a", { priceUsd: 110 }));
    expect(feed(book, [at(0, 150), at(2_000, 100), at(4_000, 111)]).flat()).toEqual([]);
    // The spike's streak was reset: the next two holding observations are the ones that fire.
    const [firing] = book.observe(SOL, at(6_000, 111));
    expect(firing?.observations).toEqual([at(4_000, 111), at(6_000, 111)]);
  });

  it("neither counts nor resets on an observation that holds but comes too soon", () => {
    const book = createTriggerBook({ confirmations: 2, holdMs: 2_000 });
    book.add(leg("a", { priceUsd: 110 }));
    expect(feed(book, [at(0, 111), at(1_999, 120)]).flat()).toEqual([]);
    const [firing] = book.observe(SOL, at(2_000, 111));
    expect(firing?.observations).toEqual([at(0, 111), at(2_000, 111)]);
  });

  it("does not count the same cached price again, nor an older one, even with no hold time", () => {
    const book = createTriggerBook({ confirmations: 2, holdMs: 0 });
    book.add(leg("a", { priceUsd: 110 }));
    expect(feed(book, [at(5_000, 111), at(5_000, 111), at(4_000, 112)]).flat()).toEqual([]);
    expect(book.observe(SOL, at(5_001, 111)).map((f) => f.observations)).toEqual([
      [at(5_000, 111), at(5_001, 111)],
    ]);
  });

  it("resets on an observation that does not hold, however soon it comes", () => {
    const book = createTriggerBook({ confirmations: 2, holdMs: 2_000 });
    book.add(leg("a", { priceUsd: 110 }));
    expect(feed(book, [at(0, 111), at(500, 109), at(2_000, 111)]).flat()).toEqual([]);
    expect(fired(book.observe(SOL, at(4_000, 111)))).toEqual(["a/single"]);
  });

  it("fires a stop the price gapped far through: a level, not a crossing", () => {
    const book = createTriggerBook({ confirmations: 2, holdMs: 2_000 });
    oco(book, "a", 120, 90);
    expect(feed(book, [at(0, 100), at(2_000, 40)]).flat()).toEqual([]);
    expect(fired(book.observe(SOL, at(4_000, 35)))).toEqual(["a/stop_loss"]);
    // A leg added with the price already through its level holds from the first observation.
    book.add(leg("late", { condition: "below", priceUsd: 90 }));
    expect(feed(book, [at(6_000, 30), at(8_000, 31)]).map(fired)).toEqual([[], ["late/single"]]);
  });

  it("holds exactly at the level, on both sides", () => {
    const book = createTriggerBook({ confirmations: 1, holdMs: 0 });
    book.add(leg("up", { condition: "above", priceUsd: 1.5 }));
    book.add(leg("down", { condition: "below", priceUsd: 1.5 }));
    expect(fired(book.observe(SOL, at(0, 1.5)))).toEqual(["up/single", "down/single"]);
  });

  it("counts each token's observations for its own legs only", () => {
    const book = createTriggerBook({ confirmations: 2, holdMs: 1_000 });
    book.add(leg("sol", { priceUsd: 110 }));
    book.add(leg("bonk", { token: BONK, priceUsd: 0.00002 }));
    expect(book.observe(SOL, at(0, 111))).toEqual([]);
    expect(book.observe(BONK, at(500, 0.00001))).toEqual([]);
    expect(fired(book.observe(SOL, at(1_000, 111)))).toEqual(["sol/single"]);
    expect(book.observe("unknown-mint", at(2_000, 1))).toEqual([]);
    expect(book.tokens()).toEqual([BONK]);
  });

  it("ignores an observation whose price or time is not usable, without resetting a streak", () => {
    const book = createTriggerBook({ confirmations: 2, holdMs: 1_000 });
    book.add(leg("a", { condition: "below", priceUsd: 90 }));
    expect(book.observe(SOL, at(0, 80))).toEqual([]);
    for (const bad of [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, 0, -5]) {
      expect(book.observe(SOL, at(500, bad))).toEqual([]);
      expect(book.observe(SOL, at(1_500, bad))).toEqual([]);
    }
    expect(book.observe(SOL, at(Number.NaN, 80))).toEqual([]);
    expect(book.observe(SOL, at(Number.POSITIVE_INFINITY, 80))).toEqual([]);
    expect(book.observe(SOL, at(1_000, 80)).map((f) => f.observations)).toEqual([[at(0, 80), at(1_000, 80)]]);
  });

  it("hands back what it saw, whatever the caller does with its objects afterwards", () => {
    const book = createTriggerBook({ confirmations: 1, holdMs: 0 });
    const mine = { ...leg("a", { priceUsd: 110 }) };
    book.add(mine);
    mine.priceUsd = 1;
    expect(book.observe(SOL, at(0, 50))).toEqual([]);
    const observation = { priceUsd: 120, atMs: 1 };
    const [firing] = book.observe(SOL, observation);
    observation.priceUsd = 0;
    expect(firing?.leg.priceUsd).toBe(110);
    expect(firing?.observations).toEqual([at(1, 120)]);
  });
});

describe("trigger book: agents and their legs", () => {
  it("cancels the other leg of an OCO pair when one fires", () => {
    const book = createTriggerBook({ confirmations: 2, holdMs: 2_000 });
    oco(book, "a", 110, 90);
    oco(book, "b", 130, 70);
    expect(book.size()).toBe(4);
    expect(feed(book, [at(0, 111), at(2_000, 112)]).map(fired)).toEqual([[], ["a/take_profit"]]);
    expect(book.has("a")).toBe(false);
    expect(book.has("b")).toBe(true);
    expect(book.size()).toBe(2);
    // a's stop-loss went with its take-profit: the price under it now fires only b's.
    expect(feed(book, [at(4_000, 60), at(6_000, 60)]).map(fired)).toEqual([[], ["b/stop_loss"]]);
    expect(book.size()).toBe(0);
    expect(book.tokens()).toEqual([]);
  });

  it("fires one leg of an agent per observation, the one added first, when both would", () => {
    for (const order of [
      ["stop_loss", "take_profit"],
      ["take_profit", "stop_loss"],
    ] as const) {
      const book = createTriggerBook({ confirmations: 1, holdMs: 0 });
      // A take-profit under the stop-loss: both hold between them.
      const legs = {
        take_profit: leg("a", { leg: "take_profit", condition: "above", priceUsd: 90 }),
        stop_loss: leg("a", { leg: "stop_loss", condition: "below", priceUsd: 110 }),
      };
      for (const name of order) book.add(legs[name]);
      expect(fired(book.observe(SOL, at(0, 100)))).toEqual([`a/${order[0]}`]);
      expect(book.size()).toBe(0);
    }
  });

  it("fires several agents on one observation in the order they were added", () => {
    const book = createTriggerBook({ confirmations: 1, holdMs: 0 });
    book.add(leg("b", { condition: "below", priceUsd: 95 }));
    book.add(leg("c", { condition: "above", priceUsd: 50 }));
    book.add(leg("a", { condition: "below", priceUsd: 99 }));
    book.add(leg("far", { condition: "below", priceUsd: 10 }));
    expect(fired(book.observe(SOL, at(0, 90)))).toEqual(["b/single", "c/single", "a/single"]);
    expect(book.has("far")).toBe(true);
  });

  it("replaces an agent's leg of the same name: the new level counts, and its streak starts again", () => {
    const book = createTriggerBook({ confirmations: 2, holdMs: 1_000 });
    book.add(leg("a", { leg: "take_profit", priceUsd: 110 }));
    expect(book.observe(SOL, at(0, 115))).toEqual([]);
    book.add(leg("a", { leg: "take_profit", priceUsd: 120 }));
    expect(book.size()).toBe(1);
    expect(feed(book, [at(1_000, 115), at(2_000, 121)]).flat()).toEqual([]);
    expect(fired(book.observe(SOL, at(3_000, 121)))).toEqual(["a/take_profit"]);
  });

  it("removes every leg of an agent, and nothing of another", () => {
    const book = createTriggerBook({ confirmations: 1, holdMs: 0 });
    oco(book, "a", 110, 90);
    book.add(leg("a", { leg: "single", token: BONK, priceUsd: 1 }));
    oco(book, "b", 110, 90);
    book.remove("a");
    book.remove("nobody");
    expect(book.has("a")).toBe(false);
    expect(book.size()).toBe(2);
    expect(book.tokens()).toEqual([SOL]);
    expect(book.observe(BONK, at(0, 5))).toEqual([]);
    expect(fired(book.observe(SOL, at(1, 200)))).toEqual(["b/take_profit"]);
  });

  it("refuses a leg or options it could not keep sorted or count", () => {
    const book = createTriggerBook({ confirmations: 1, holdMs: 0 });
    for (const bad of [
      { priceUsd: Number.NaN },
      { priceUsd: Number.POSITIVE_INFINITY },
      { priceUsd: 0 },
      { priceUsd: -1 },
      { condition: "sideways" as never },
      { leg: "trailing" as never },
      { token: "" },
    ]) {
      expect(() => book.add(leg("a", bad)), JSON.stringify(bad)).toThrow(RangeError);
    }
    expect(() => book.add(leg(""))).toThrow(RangeError);
    expect(book.size()).toBe(0);
    for (const options of [
      { confirmations: 0, holdMs: 0 },
      { confirmations: 1.5, holdMs: 0 },
      { confirmations: 1, holdMs: -1 },
      { confirmations: 1, holdMs: Number.NaN },
    ]) {
      expect(() => createTriggerBook(options), JSON.stringify(options)).toThrow(RangeError);
    }
  });
});

describe("trigger book: cost", () => {
  /**
   * A book of `n` legs on SOL spread over 1..1000 (half above at 500 and over, half below under
   * 500), and what each observe looked at.
   */
  function crowded(n: number) {
    const examined: number[] = [];
    const book = createTriggerBook({
      confirmations: 2,
      holdMs: 1_000,
      onExamined: (legs) => examined.push(legs),
    });
    for (let i = 0; i < n; i++) {
      const above = i % 2 === 0;
      book.add(
        leg(`agent-${i}`, {
          condition: above ? "above" : "below",
          priceUsd: above ? 500 + (500 * i) / n : 1 + (499 * i) / n,
        }),
      );
    }
    return { book, examined };
  }

  it("looks at the binary searches' steps and the legs at the price, not at every leg", () => {
    const { book, examined } = crowded(10_000);
    book.add(leg("other", { token: BONK }));
    // Between the two sides (below-levels end at 499.95): nothing holds, so nothing but the two
    // searches, 13 steps each over 5,000 legs.
    expect(book.observe(SOL, at(0, 499.97))).toEqual([]);
    expect(examined.at(-1)).toBe(2 * 13);
    // Just over the lowest above-levels: the 11 legs at 500..501, and the searches.
    expect(book.observe(SOL, at(1, 501))).toEqual([]);
    expect(examined.at(-1)).toBe(2 * 13 + 11);
    // Their streaks are looked at when the price leaves them, and then no more.
    expect(book.observe(SOL, at(2, 499.97))).toEqual([]);
    expect(examined.at(-1)).toBe(2 * 13 + 11);
    expect(book.observe(SOL, at(3, 499.97))).toEqual([]);
    expect(examined.at(-1)).toBe(2 * 13);
    // Another token's legs are not looked at all.
    book.observe(BONK, at(4, 1));
    expect(examined.at(-1)).toBe(1);
    expect(book.size()).toBe(10_001);
  });

  it("leaves the cancelled legs of fired agents where they are, and never fires them", () => {
    const examined: number[] = [];
    const book = createTriggerBook({
      confirmations: 1,
      holdMs: 0,
      onExamined: (legs) => examined.push(legs),
    });
    for (let i = 0; i < 2_000; i++) oco(book, `agent-${i}`, 200 + i / 10, 100 - i / 20);
    const firings = book.observe(SOL, at(0, 210));
    // The take-profits at 200..210 fired (101 of them); their stop-losses far below stayed where they were.
    expect(firings).toHaveLength(101);
    expect(examined.at(-1)).toBe(2 * 11 + 101);
    expect(book.size()).toBe(2 * (2_000 - 101));
    // Down through every stop: the cancelled ones are passed over, the rest fire.
    const stops = book.observe(SOL, at(1, 0.01));
    expect(stops).toHaveLength(2_000 - 101);
    expect(stops.every((f) => f.leg.leg === "stop_loss" && Number(f.leg.agentId.slice(6)) > 100)).toBe(true);
    expect(book.size()).toBe(0);
  });

  it("drops what fired and sweeps what was cancelled, so that the searches run over the living legs", () => {
    const examined: number[] = [];
    const book = createTriggerBook({
      confirmations: 1,
      holdMs: 0,
      onExamined: (legs) => examined.push(legs),
    });
    for (let i = 0; i < 2_000; i++) oco(book, `agent-${i}`, 200 + i / 10, 100 - i / 20);
    // The take-profits up to 398.9 fire (1,990 of them); 10 are left above, at 399..399.9.
    expect(book.observe(SOL, at(0, 398.95))).toHaveLength(1_990);
    // The fired legs left the above-side: 10 legs (4 steps); the cancelled stop-losses are still
    // on the below-side, dead: 2,000 legs (11 steps).
    expect(book.observe(SOL, at(1, 398.95))).toEqual([]);
    expect(examined.at(-1)).toBe(4 + 11);
    // The next add to the below-side sweeps it: 10 living stop-losses and the new leg (4 steps).
    book.add(leg("new", { condition: "below", priceUsd: 50 }));
    expect(book.observe(SOL, at(2, 398.95))).toEqual([]);
    expect(examined.at(-1)).toBe(4 + 4);
    // Removing the last 10 agents sweeps as it goes: none left above, at most 2 legs below (2 steps).
    for (let i = 1_990; i < 2_000; i++) book.remove(`agent-${i}`);
    expect(book.observe(SOL, at(3, 398.95))).toEqual([]);
    expect(examined.at(-1)).toBe(0 + 2);
    expect(book.size()).toBe(1);
  });
});

describe("trigger book: against the plain rules", () => {
  it("fires what a walk over every leg fires, on random walks with adds, removes and replacements", () => {
    for (let seed = 1; seed <= 20; seed++) {
      const random = prng(seed);
      const options = { confirmations: 1 + random.int(3), holdMs: random.pick([0, 1_000, 2_000]) };
      const book = createTriggerBook(options);
      const naive = createNaiveTriggerBook(options);
      const both = (act: (b: TriggerBook) => void) => {
        act(book);
        act(naive);
      };
      const tokens = [SOL, BONK, "third-mint"];
      const prices = new Map(tokens.map((t): [string, number] => [t, 100]));
      let now = 0;
      for (let step = 0; step < 2_000; step++) {
        const roll = random.next();
        const agentId = `agent-${random.int(60)}`;
        const token = random.pick(tokens);
        const near = (prices.get(token) as number) * (0.9 + 0.2 * random.next());
        // Few distinct levels, so that equal levels are common.
        const level = Math.round(near);
        if (roll < 0.15) {
          const name = random.pick(["single", "take_profit", "stop_loss"] as const);
          const condition = random.pick(["above", "below"] as const);
          both((b) => b.add({ agentId, leg: name, token, condition, priceUsd: level }));
        } else if (roll < 0.2) {
          both((b) => b.remove(agentId));
        } else {
          // Mostly forward in time, sometimes the same cached price again, sometimes too soon.
          now += random.pick([0, 300, 1_000, 2_000, 2_500]);
          const price = Math.max(1, (prices.get(token) as number) * (0.97 + 0.06 * random.next()));
          prices.set(token, price);
          const observation = at(now, random.next() < 0.02 ? Number.NaN : price);
          const expected = naive.observe(token, observation);
          expect(book.observe(token, observation), `seed ${seed} step ${step}`).toEqual(expected);
        }
        expect(book.size(), `seed ${seed} step ${step}`).toBe(naive.size());
      }
      expect([...book.tokens()].sort()).toEqual([...naive.tokens()].sort());
      for (let i = 0; i < 60; i++) expect(book.has(`agent-${i}`)).toBe(naive.has(`agent-${i}`));
    }
  });
});

describe("reference price", () => {
  const NOW = 1_000_000;
  const options = { nowMs: NOW, ttlMs: 30_000 };
  /** A source's sample `ageMs` old (negative: ahead of now; null: without a time). */
  const sample = (source: string, priceUsd: number | undefined, ageMs: number | null = 1_000) => ({
    source,
    priceUsd,
    atMs: ageMs === null ? undefined : NOW - ageMs,
  });

  it("is the one source's price when there is one", () => {
    expect(referencePrice([sample("jupiter", 101.5, 2_000)], options)).toEqual({
      ok: true,
      priceUsd: 101.5,
      atMs: NOW - 2_000,
      sources: [{ source: "jupiter", priceUsd: 101.5, atMs: NOW - 2_000 }],
    });
  });

  it("is the mean of two, and the middle of three, at the oldest sample's time", () => {
    const two = referencePrice([sample("jupiter", 100, 1_000), sample("pyth", 104, 3_000)], options);
    expect(two).toMatchObject({ ok: true, priceUsd: 102, atMs: NOW - 3_000 });
    const three = referencePrice(
      [sample("jupiter", 100, 1_000), sample("pyth", 5_000, 500), sample("switchboard", 99, 2_000)],
      options,
    );
    expect(three).toMatchObject({ ok: true, priceUsd: 100, atMs: NOW - 2_000 });
    const four = referencePrice(
      [sample("a", 1), sample("b", 400), sample("c", 100), sample("d", 102)],
      options,
    );
    expect(four).toMatchObject({ ok: true, priceUsd: 101 });
  });

  it("leaves out stale samples and samples from the future, keeping the edges", () => {
    const result = referencePrice(
      [
        sample("stale", 50, 30_001),
        sample("edge", 100, 30_000),
        sample("ahead", 300, -2_001),
        sample("skewed", 110, -2_000),
      ],
      options,
    );
    expect(result).toEqual({
      ok: true,
      priceUsd: 105,
      atMs: NOW - 30_000,
      sources: [
        { source: "edge", priceUsd: 100, atMs: NOW - 30_000 },
        { source: "skewed", priceUsd: 110, atMs: NOW + 2_000 },
      ],
    });
    expect(referencePrice([sample("skewed", 110, -2_000)], { ...options, aheadMs: 0 })).toMatchObject({
      ok: false,
    });
  });

  it("says why when no sample is left", () => {
    expect(referencePrice([sample("jupiter", 100, 45_000)], options)).toEqual({
      ok: false,
      reason: "no fresh price: jupiter's is 45 s old",
    });
    const none = referencePrice(
      [
        sample("jupiter", undefined),
        sample("nan", Number.NaN),
        sample("infinite", Number.POSITIVE_INFINITY),
        sample("zero", 0),
        sample("negative", -3),
        sample("timeless", 100, null),
        sample("ahead", 100, -5_500),
      ],
      options,
    );
    expect(none).toEqual({
      ok: false,
      reason:
        "no fresh price: jupiter has no price; nan's price NaN is not a positive number; " +
        "infinite's price Infinity is not a positive number; zero's price 0 is not a positive number; " +
        "negative's price -3 is not a positive number; timeless's price has no time; " +
        "ahead's is 5.5 s ahead of this clock",
    });
    expect(referencePrice([], options)).toEqual({ ok: false, reason: "no fresh price: no source gave one" });
  });

  it("counts a source listed twice once, by its newer sample", () => {
    const result = referencePrice(
      [sample("jupiter", 100, 5_000), sample("pyth", 200), sample("jupiter", 110, 1_000)],
      options,
    );
    expect(result).toEqual({
      ok: true,
      priceUsd: 155,
      atMs: NOW - 1_000,
      sources: [
        { source: "jupiter", priceUsd: 110, atMs: NOW - 1_000 },
        { source: "pyth", priceUsd: 200, atMs: NOW - 1_000 },
      ],
    });
  });

  it("refuses options it cannot judge freshness by", () => {
    expect(() => referencePrice([], { nowMs: Number.NaN, ttlMs: 1 })).toThrow(RangeError);
    expect(() => referencePrice([], { nowMs: 0, ttlMs: -1 })).toThrow(RangeError);
    expect(() => referencePrice([], { nowMs: 0, ttlMs: 1, aheadMs: Number.NaN })).toThrow(RangeError);
  });
});

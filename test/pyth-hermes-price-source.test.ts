/**
 * Pyth prices read from Hermes (src/token/pyth-hermes-price-source.ts) against a local server
 * speaking Hermes' documented shape (support/fake-hermes.ts), through the same JSON upstream the
 * service wires: the price is price × 10^expo, its time the feed's publish_time, what is not a
 * reliable price is unpriced, and what is not an answer is unavailable.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { UnavailableError } from "../src/domain/errors.ts";
import { loadCatalog } from "../src/token/catalog.ts";
import {
  createPythHermesPriceSource,
  FEEDS_PER_REQUEST,
  type PythFeed,
} from "../src/token/pyth-hermes-price-source.ts";
import type { PriceSource } from "../src/token/token-source.ts";
import { createJsonUpstream, type UpstreamOutcome } from "../src/upstream/json-upstream.ts";
import { DOC_FEED_ID, type FakeHermes, hermesPrice, startFakeHermes } from "./support/fake-hermes.ts";

const catalog = loadCatalog().tokens;
const mintOf = (symbol: string) => catalog.find((t) => t.symbol === symbol)?.mint as string;
const SOL = mintOf("SOL");
const JUP = mintOf("JUP");
const BONK = mintOf("BONK");
/** Made-up feed ids: the tests name their own, as an operator does. */
const JUP_FEED = "0a".repeat(32);
const BONK_FEED = "0b".repeat(32);
const TIMEOUT_MS = 300;
const MAX_BYTES = 64 * 1024;

describe("Pyth prices from Hermes", () => {
  let hermes: FakeHermes;
  let outcomes: UpstreamOutcome[];
  const sourceOf = (feeds: readonly PythFeed[], url = hermes.url): PriceSource =>
    createPythHermesPriceSource({
      upstream: createJsonUpstream({
        name: "Pyth Hermes",
        baseUrl: url,
        timeoutMs: TIMEOUT_MS,
        maxConcurrency: 4,
        maxQueued: 16,
        // Each failure below is its own: none opens the circuit for the next.
        breaker: { failures: 1000, openMs: 10 },
        defaultRetryAfterMs: 10,
        onCall: (_endpoint, outcome) => outcomes.push(outcome),
      }),
      feeds,
      maxResponseBytes: MAX_BYTES,
    });
  let source: PriceSource;

  beforeAll(async () => {
    hermes = await startFakeHermes();
  });
  afterAll(() => hermes.close());
  beforeEach(() => {
    hermes.fault = undefined;
    hermes.requests.length = 0;
    outcomes = [];
    source = sourceOf([
      { mint: SOL, symbol: "SOL", feedId: DOC_FEED_ID },
      { mint: JUP, symbol: "JUP", feedId: JUP_FEED },
    ]);
  });

  it("reads Pyth's example answer: price × 10^expo, asOf its publish_time, in one request for every mint", async () => {
    hermes.feeds.set(JUP_FEED, hermesPrice(0.5));
    const [sol, jup] = await source.pricesOf([SOL, JUP]);
    // Pyth's example: price "2920679499999", expo -8, publish_time 1717632000.
    expect(sol).toEqual({
      mint: SOL,
      symbol: "SOL",
      price: 29206.79499999,
      change24h: 0,
      asOf: new Date(1717632000 * 1000),
      slot: 0,
      unpriced: false,
    });
    expect(jup).toMatchObject({ mint: JUP, symbol: "JUP", price: 0.5, unpriced: false });
    expect(hermes.requests).toEqual([
      {
        path: "/v2/updates/price/latest",
        ids: [DOC_FEED_ID, JUP_FEED],
        parsed: "true",
        ignoreInvalid: "true",
      },
    ]);
    expect(source.watchlist).toEqual([SOL, JUP]);
  });

  it("scales by any sane exponent, and keeps a stale publish_time as the price's time", async () => {
    const stale = new Date(Date.now() - 3_600_000);
    hermes.feeds.set(JUP_FEED, {
      price: "52",
      conf: "0",
      expo: -2,
      publish_time: Math.floor(stale.getTime() / 1000),
    });
    const [jup] = await source.pricesOf([JUP]);
    expect(jup?.price).toBe(0.52);
    expect(jup?.unpriced).toBe(false);
    // An hour old, however fresh the answer: the oracle's time, not the read's.
    expect(jup?.asOf).toEqual(new Date(Math.floor(stale.getTime() / 1000) * 1000));
    hermes.feeds.set(JUP_FEED, { price: "5", conf: "0", expo: 2, publish_time: 1717632000 });
    expect((await source.pricesOf([JUP]))[0]?.price).toBe(500);
  });

  it("a mint without a feed is unpriced and asks nothing; a feed Hermes does not know is unpriced", async () => {
    const before = Date.now();
    const [bonk] = await source.pricesOf([BONK]);
    expect(bonk).toMatchObject({ mint: BONK, symbol: "", price: 0, unpriced: true });
    expect(bonk?.asOf.getTime()).toBeGreaterThanOrEqual(before);
    expect(hermes.requests).toEqual([]);
    const withBonk = sourceOf([
      { mint: SOL, symbol: "SOL", feedId: DOC_FEED_ID },
      { mint: BONK, symbol: "BONK", feedId: BONK_FEED },
    ]);
    const [sol, unknown] = await withBonk.pricesOf([SOL, BONK]);
    expect(sol?.unpriced).toBe(false);
    expect(unknown).toMatchObject({ mint: BONK, symbol: "BONK", unpriced: true });
  });

  it.each([
    ["a confidence wider than 2 % of the price", { price: "100000000", conf: "2000001", expo: -8 }],
    ["a zero price", { price: "0", conf: "0", expo: -8 }],
    ["a negative price", { price: "-50000000", conf: "0", expo: -8 }],
    ["a price that is not an integer string", { price: "0.5", conf: "0", expo: 0 }],
    ["a price as a number", { price: 50000000, conf: "0", expo: -8 }],
    ["an absurd exponent", { price: "5", conf: "0", expo: -300 }],
    ["a fractional exponent", { price: "5", conf: "0", expo: -1.5 }],
    ["a price past int64", { price: "99999999999999999999", conf: "0", expo: -8 }],
    ["no publish_time", { price: "50000000", conf: "0", expo: -8, publish_time: undefined }],
    [
      "a publish_time in milliseconds past any date",
      { price: "50000000", conf: "0", expo: -8, publish_time: 1e15 },
    ],
  ])("%s is unpriced", async (_what, entry) => {
    hermes.feeds.set(JUP_FEED, { publish_time: 1717632000, ...entry } as never);
    const [sol, jup] = await source.pricesOf([SOL, JUP]);
    expect(jup).toMatchObject({ mint: JUP, symbol: "JUP", price: 0, unpriced: true });
    // The other feed of the answer is still read.
    expect(sol?.unpriced).toBe(false);
  });

  it("a confidence of exactly 2 % is a price", async () => {
    hermes.feeds.set(JUP_FEED, { price: "100000000", conf: "2000000", expo: -8, publish_time: 1717632000 });
    expect((await source.pricesOf([JUP]))[0]).toMatchObject({ price: 1, unpriced: false });
  });

  it("asks for many feeds a chunk to a request", async () => {
    const feeds = catalog.map((t, i) => ({
      mint: t.mint,
      symbol: t.symbol,
      feedId: i.toString(16).padStart(64, "f"),
    }));
    const many = [
      ...feeds,
      ...Array.from({ length: FEEDS_PER_REQUEST }, (_, i) => ({
        mint: `${i}`,
        symbol: "",
        feedId: (1000 + i).toString(16).padStart(64, "e"),
      })),
    ];
    for (const feed of many) hermes.feeds.set(feed.feedId, hermesPrice(2));
    const prices = await sourceOf(many).pricesOf(many.map((f) => f.mint));
    expect(prices.every((p) => p.price === 2 && !p.unpriced)).toBe(true);
    expect(hermes.requests.map((r) => r.ids.length)).toEqual([
      FEEDS_PER_REQUEST,
      many.length - FEEDS_PER_REQUEST,
    ]);
  });

  it.each([
    ["an HTTP error", { kind: "status", status: 503 }, "http_error", /Pyth Hermes answered HTTP 503/],
    ["not JSON", { kind: "malformed" }, "bad_response", /not JSON/],
    [
      "JSON that is not a price update",
      { kind: "body", body: [{ id: DOC_FEED_ID }] },
      "ok",
      /not a price update/,
    ],
    ["parsed that is not a list", { kind: "body", body: { parsed: {} } }, "ok", /not a price update/],
    ["a huge answer", { kind: "huge", bytes: 4 * MAX_BYTES }, "too_large", /more than 65536 bytes/],
    ["a slow answer", { kind: "delay", ms: 5 * TIMEOUT_MS }, "timeout", /did not answer within 300 ms/],
    ["a dropped connection", { kind: "reset" }, "unreachable", /cannot be reached/],
  ] as const)("%s is unavailable, saying why", async (_what, fault, outcome, message) => {
    hermes.fault = fault;
    const error = await source.pricesOf([SOL, BONK]).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UnavailableError);
    expect((error as Error).message).toMatch(/^Pyth prices are unavailable: /);
    expect((error as Error).message).toMatch(message);
    expect(outcomes).toEqual([outcome]);
  });

  it("never shows the URL, nor a token in its path, in an error", async () => {
    const closed = sourceOf(
      [{ mint: SOL, symbol: "SOL", feedId: DOC_FEED_ID }],
      "http://127.0.0.1:1/secret-token",
    );
    const error = (await closed.pricesOf([SOL]).catch((e: unknown) => e)) as Error;
    expect(error).toBeInstanceOf(UnavailableError);
    expect(error.message).not.toMatch(/secret|127\.0\.0\.1/);
  });
});

/**
 * Prices and the token list from Jupiter, through the real service on a real socket: against a
 * local server speaking Jupiter's documented shapes (support/fake-jupiter.ts), and, when
 * JUPITER_API_URL_TEST is set (JUPITER_API_KEY_TEST with it, if the URL needs a key), the tests
 * that need no fault injection run against Jupiter itself too. Upstream requests are counted from
 * the service's own /metrics, so the same counting works against both.
 */
import { randomBytes } from "node:crypto";
import { toJson } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { getAddressDecoder } from "@solana/addresses";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GetTokenPricesResponseSchema, TokenService } from "../gen/token/v1/token_pb.ts";
import { loadCatalog } from "../src/token/catalog.ts";
import { createProtocols } from "./support/callers.ts";
import { useCleanups } from "./support/cleanups.ts";
import {
  DOC_PRICES,
  DOC_TOKEN,
  type FakeJupiter,
  type FakePrice,
  type FakeToken,
  startFakeJupiter,
} from "./support/fake-jupiter.ts";
import { type RunningServer, startServer } from "./support/start-server.ts";

const SOL = "So11111111111111111111111111111111111111112";
const USDC = "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v";
const API_KEY = "test-key-0123456789";
const catalog = loadCatalog();
const decoder = getAddressDecoder();
const newMint = (): string => decoder.decode(randomBytes(32));
const newMints = (n: number): string[] => Array.from({ length: n }, newMint);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const cleanup = useCleanups();

function clientOf(server: RunningServer, httpVersion: "1.1" | "2" = "2") {
  return createClient(TokenService, createConnectTransport({ baseUrl: server.baseUrl, httpVersion }));
}

/** The service's own count of upstream requests to Jupiter, by endpoint and outcome. */
async function upstreamCount(server: RunningServer, endpoint: string, outcome?: string): Promise<number> {
  const text = await (await fetch(`${server.baseUrl}/metrics`)).text();
  let total = 0;
  for (const line of text.split("\n")) {
    if (!line.startsWith("upstream_requests_total{")) continue;
    if (!line.includes(`endpoint="${endpoint}"`)) continue;
    if (outcome !== undefined && !line.includes(`outcome="${outcome}"`)) continue;
    total += Number(line.slice(line.lastIndexOf(" ") + 1));
  }
  return total;
}

async function metricValue(server: RunningServer, prefix: string): Promise<number | undefined> {
  const text = await (await fetch(`${server.baseUrl}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith(prefix));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(" ") + 1));
}

/** A server on Jupiter at `url`, closed after the test unless `kept` (then the caller closes it). */
async function startWith(url: string, env: Record<string, string> = {}, apiKey = API_KEY, kept = false) {
  const server = await startServer({
    env: { JUPITER_API_URL: url, ...(apiKey === "" ? {} : { JUPITER_API_KEY: apiKey }), ...env },
  });
  if (!kept) cleanup(() => server.close());
  return server;
}

/** The tests that need no fault injection, against a target (the fake, or Jupiter itself). */
function sharedTests(target: () => { url: string; apiKey: string; fake: FakeJupiter | undefined }) {
  let server: RunningServer;
  beforeAll(async () => {
    const { url, apiKey } = target();
    server = await startWith(url, {}, apiKey, true);
  });
  afterAll(() => server.close());

  it("prices SOL and USDC with asOf (when obtained) and slot (Jupiter's blockId)", async () => {
    const before = Date.now();
    const { data } = await clientOf(server).getTokenPrices({ mints: [SOL, USDC] });
    const after = Date.now();
    expect(data.map((p) => p.mint)).toEqual([SOL, USDC]);
    for (const p of data) {
      expect(p.unpriced).toBe(false);
      expect(p.price).toBeGreaterThan(0);
      expect(p.slot).toBeGreaterThan(0n);
      const asOf = Number(p.asOf?.seconds) * 1000 + Math.floor((p.asOf?.nanos ?? 0) / 1e6);
      expect(asOf).toBeGreaterThanOrEqual(before - 1000);
      expect(asOf).toBeLessThanOrEqual(after);
    }
    expect(data.map((p) => p.symbol)).toEqual(["SOL", "USDC"]);
    const fake = target().fake;
    if (fake !== undefined) {
      // Exactly the documented example's figures.
      expect(data[0]?.price).toBe(DOC_PRICES[SOL]?.usdPrice);
      expect(data[0]?.change24h).toBe(DOC_PRICES[SOL]?.priceChange24h);
      expect(data[0]?.slot).toBe(BigInt(DOC_PRICES[SOL]?.blockId ?? 0));
      expect(fake.requests.every((r) => r.apiKey === target().apiKey)).toBe(true);
    }
  });

  it("a mint without a price is an unpriced entry in every protocol, the same JSON in each", async () => {
    const unknown = newMint();
    const answers = await Promise.all(
      createProtocols(server.baseUrl).map((p) =>
        p.call(TokenService, "GetTokenPrices", { mints: [unknown, USDC] }, {}),
      ),
    );
    const first = answers[0];
    expect(first?.ok).toBe(true);
    if (first?.ok !== true) return;
    const [missing, priced] = (first.json as { data: Record<string, unknown>[] }).data;
    expect(missing).toMatchObject({ mint: unknown, price: 0, change24h: 0, slot: "0", unpriced: true });
    expect(priced).toMatchObject({ mint: USDC, unpriced: false });
    for (const answer of answers) expect(answer).toEqual(first);
  });

  it("REST takes repeated mints (?mints=a&mints=b)", async () => {
    const res = await fetch(`${server.baseUrl}/v1/tokens/prices?mints=${USDC}&mints=${SOL}`);
    expect(res.status).toBe(200);
    const body = (await res.json()) as { data: { mint: string; asOf: string; slot: string }[] };
    expect(body.data.map((p) => p.mint)).toEqual([USDC, SOL]);
    expect(body.data[0]?.asOf).toMatch(/Z$/);
    expect(body.data[0]?.slot).toMatch(/^[1-9]\d*$/);
  });

  it("100 mints go upstream 50 to a request", async () => {
    const mints = [SOL, USDC, ...newMints(98)];
    const before = await upstreamCount(server, "price");
    const { data } = await clientOf(server).getTokenPrices({ mints });
    expect(data.map((p) => p.mint)).toEqual(mints);
    expect(data.filter((p) => p.unpriced).length).toBe(98);
    expect((await upstreamCount(server, "price")) - before).toBe(2);
  });

  it("1,000 concurrent calls for the same mints on a cold cache make one upstream request per chunk", async () => {
    const mints = newMints(60); // two chunks, 50 and 10
    // 1,000 calls may take longer than the default price TTL on a busy machine; a refresh mid-way
    // would be a second (correct) request, not a failure to coalesce, which is what this checks.
    const fresh = await startWith(
      target().url,
      { PRICE_TTL_MS: "600000", PRICE_MAX_STALE_MS: "600000" },
      target().apiKey,
    );
    const client = clientOf(fresh);
    const answers = await Promise.all(
      Array.from({ length: 1000 }, () =>
        client.getTokenPrices({ mints }).then((r) => toJson(GetTokenPricesResponseSchema, r)),
      ),
    );
    expect(new Set(answers.map((a) => JSON.stringify(a))).size).toBe(1);
    expect(await upstreamCount(fresh, "price")).toBe(2);
    // Symbols come from the token list: its searches are batched too (100 mints a request).
    expect(await upstreamCount(fresh, "tokens_search")).toBeLessThanOrEqual(2);
    const fake = target().fake;
    if (fake !== undefined) {
      expect(
        fake
          .priceRequestsFor(mints)
          .map((r) => r.ids.length)
          .sort((a, b) => a - b),
      ).toEqual([10, 50]);
    }
  });

  it("a symbol resolves through the token list: every token with it, verified first", async () => {
    const { data } = await clientOf(server).getTokenPrices({ symbol: "usdc" });
    expect(data.length).toBeGreaterThanOrEqual(1);
    expect(data[0]?.mint).toBe(USDC);
    for (const p of data) expect(p.symbol.toLowerCase()).toBe("usdc");
  });

  it("GetTokenMetadata's logoURI and tags come from the token list", async () => {
    const { data } = await clientOf(server).getTokenMetadata({ mint: USDC });
    const fake = target().fake;
    const listed = fake?.tokens.find((t) => t.id === USDC);
    if (listed !== undefined) {
      expect(data?.logoUri).toBe(listed.icon);
      expect(data?.tags).toEqual(listed.tags);
    } else {
      expect(data?.logoUri).toMatch(/^https:\/\//);
    }
  });
}

describe("Jupiter prices against a local server with Jupiter's shapes", () => {
  let fake: FakeJupiter;
  beforeAll(async () => {
    fake = await startFakeJupiter();
    const token = (
      id: string,
      symbol: string,
      isVerified: boolean,
      extra: Partial<FakeToken> = {},
    ): FakeToken => ({
      id,
      name: `${symbol} token`,
      symbol,
      icon: `https://icons.example/${id}.png`,
      decimals: 6,
      isVerified,
      tags: isVerified ? ["verified"] : [],
      ...extra,
    });
    // Two impostors named USDC, listed by the search before the real one, and one near miss.
    const impostors = [newMint(), newMint()];
    fake.tokens.push(
      token(impostors[0] as string, "USDC", false),
      token(SOL, "SOL", true, { name: "Wrapped SOL", tags: ["verified", "strict"] }),
      token(impostors[1] as string, "usdc", false),
      token(newMint(), "USDCX", false),
      token(USDC, "USDC", true, { name: "USD Coin", tags: ["verified", "stablecoin"] }),
    );
    for (const mint of impostors) {
      fake.prices.set(mint, { ...(DOC_PRICES[USDC] as FakePrice), usdPrice: 0.01 });
    }
  });

  afterAll(() => fake.close());

  describe("shared", () => sharedTests(() => ({ url: fake.url, apiKey: API_KEY, fake })));

  it("a symbol lists impostors after the verified token, in Jupiter's order, and no near misses", async () => {
    const server = await startWith(fake.url);
    const { data } = await clientOf(server).getTokenPrices({ symbol: "USDC" });
    const impostors = fake.tokens
      .filter((t) => t.symbol.toLowerCase() === "usdc" && !t.isVerified)
      .map((t) => t.id);
    expect(data.map((p) => p.mint)).toEqual([USDC, ...impostors]);
  });

  it("without a filter, the answer is the watchlist (PRICE_WATCHLIST)", async () => {
    const extra = newMint();
    const server = await startWith(fake.url, { PRICE_WATCHLIST: `${USDC},${extra},${DOC_TOKEN.id}` });
    const { data } = await clientOf(server).getTokenPrices({});
    expect(data.map((p) => [p.mint, p.unpriced])).toEqual([
      [USDC, false],
      [extra, true],
      [DOC_TOKEN.id, true],
    ]);
    // The catalog's watchlist by default.
    const byDefault = await startWith(fake.url);
    const all = await clientOf(byDefault).getTokenPrices({});
    expect(all.data.map((p) => p.mint)).toEqual(catalog.tokens.map((t) => t.mint));
  });

  describe("faults", () => {
    const unavailable = async (call: Promise<unknown>, mentions: RegExp) => {
      const error = await call.then(
        () => undefined,
        (e: unknown) => ConnectError.from(e),
      );
      expect(error?.code).toBe(Code.Unavailable);
      expect(error?.rawMessage).toMatch(mentions);
      // Never the URL, the key or a stack.
      expect(error?.rawMessage).not.toContain(fake.url);
      expect(error?.rawMessage).not.toContain(API_KEY);
      expect(error?.rawMessage).not.toMatch(/\n\s+at /);
    };

    it("500s, malformed JSON, a 10 MB body and a timeout are unavailable on a cold mint; slow answers are waited for", async () => {
      const server = await startWith(fake.url, {
        JUPITER_TIMEOUT_MS: "800",
        JUPITER_BREAKER_FAILURES: "100",
      });
      const client = clientOf(server);
      const cases: [FakeJupiter["fault"], RegExp, string][] = [
        [{ kind: "status", status: 500 }, /Jupiter answered HTTP 500/, "http_error"],
        [{ kind: "status", status: 503 }, /Jupiter answered HTTP 503/, "http_error"],
        [{ kind: "malformed" }, /not JSON/, "bad_response"],
        [{ kind: "huge", bytes: 10 * 1024 * 1024 }, /more than 1048576 bytes/, "too_large"],
        [{ kind: "delay", ms: 3000 }, /did not answer within 800 ms/, "timeout"],
        [{ kind: "reset" }, /cannot be reached/, "unreachable"],
      ];
      for (const [fault, mentions, outcome] of cases) {
        fake.fault = fault;
        const before = await upstreamCount(server, "price", outcome);
        await unavailable(client.getTokenPrices({ mints: [newMint()] }), mentions);
        expect(await upstreamCount(server, "price", outcome), outcome).toBe(before + 1);
      }
      fake.fault = { kind: "delay", ms: 300 };
      const slow = await client.getTokenPrices({ mints: [SOL] });
      expect(slow.data[0]?.price).toBe(DOC_PRICES[SOL]?.usdPrice);
      fake.fault = undefined;
      // Each failure logged, rate-limited, without the key.
      const failures = server.logs.filter((l) => l.msg === "a Jupiter request failed");
      expect(failures.length).toBeGreaterThanOrEqual(2);
      expect(JSON.stringify(server.logs)).not.toContain(API_KEY);
    });

    it("a 429 is waited out: no call until its Retry-After has passed, stale prices meanwhile", async () => {
      const server = await startWith(fake.url, { PRICE_TTL_MS: "100" });
      const client = clientOf(server);
      const first = (await client.getTokenPrices({ mints: [SOL] })).data[0];
      await sleep(150);
      fake.fault = { kind: "status", status: 429, retryAfter: "2" };
      const asked = fake.priceRequestsFor([SOL]).length;
      // Stale, served while the revalidation meets the 429.
      const stale = (await client.getTokenPrices({ mints: [SOL] })).data[0];
      expect(stale?.asOf).toEqual(first?.asOf);
      await sleep(100);
      expect(fake.priceRequestsFor([SOL]).length).toBe(asked + 1);
      // For the next 2 s nothing goes to Jupiter: cold mints are unavailable, warm ones stale.
      await unavailable(client.getTokenPrices({ mints: [newMint()] }), /rate limiting this service/);
      for (let i = 0; i < 5; i++) {
        expect((await client.getTokenPrices({ mints: [SOL] })).data[0]?.asOf).toEqual(first?.asOf);
        await sleep(200);
      }
      expect(fake.priceRequestsFor([SOL]).length).toBe(asked + 1);
      expect(await upstreamCount(server, "price", "rate_limited")).toBeGreaterThanOrEqual(2);
      fake.fault = undefined;
      await sleep(1200);
      await client.getTokenPrices({ mints: [SOL] }); // stale, and revalidates
      await sleep(100);
      const renewed = (await client.getTokenPrices({ mints: [SOL] })).data[0];
      expect(Number(renewed?.asOf?.seconds) * 1000 + (renewed?.asOf?.nanos ?? 0) / 1e6).toBeGreaterThan(
        Number(first?.asOf?.seconds) * 1000 + (first?.asOf?.nanos ?? 0) / 1e6,
      );
    });

    it("upstream down: stale with the old asOf, unavailable past PRICE_MAX_STALE_MS, then recovery without a restart", async () => {
      const server = await startWith(fake.url, {
        PRICE_TTL_MS: "100",
        PRICE_MAX_STALE_MS: "1500",
        JUPITER_BREAKER_FAILURES: "3",
        JUPITER_BREAKER_OPEN_MS: "400",
      });
      const client = clientOf(server);
      const first = (await client.getTokenPrices({ mints: [SOL, USDC] })).data;
      fake.fault = { kind: "reset" };
      await sleep(300);
      // Stale answers, each one saying how old it is.
      for (let i = 0; i < 4; i++) {
        const { data } = await client.getTokenPrices({ mints: [SOL, USDC] });
        expect(data.map((p) => p.asOf)).toEqual(first.map((p) => p.asOf));
        expect(data.map((p) => p.price)).toEqual(first.map((p) => p.price));
        await sleep(150);
      }
      // Consecutive failures opened the circuit: calls stop reaching Jupiter for a while.
      expect(await metricValue(server, 'upstream_circuit_state{upstream="jupiter"}')).toBeGreaterThan(0);
      expect(await upstreamCount(server, "price", "circuit_open")).toBeGreaterThan(0);
      await sleep(1000);
      await unavailable(client.getTokenPrices({ mints: [SOL, USDC] }), /price of .* is unavailable/);
      fake.fault = undefined;
      // The circuit's trial call goes through once it half-opens; then prices are fresh again.
      let recovered: Awaited<ReturnType<ReturnType<typeof clientOf>["getTokenPrices"]>> | undefined;
      for (let i = 0; i < 40 && recovered === undefined; i++) {
        recovered = await client.getTokenPrices({ mints: [SOL, USDC] }).catch(() => undefined);
        if (recovered === undefined) await sleep(100);
      }
      expect(recovered?.data.map((p) => p.unpriced)).toEqual([false, false]);
      expect(
        Number(recovered?.data[0]?.asOf?.seconds) * 1000 + (recovered?.data[0]?.asOf?.nanos ?? 0) / 1e6,
      ).toBeGreaterThan(Date.now() - 2000);
      expect(await metricValue(server, 'upstream_circuit_state{upstream="jupiter"}')).toBe(0);
      expect(await metricValue(server, 'cache_lookups_total{cache="price",result="stale"}')).toBeGreaterThan(
        0,
      );
    });

    it("bounded concurrency: past the calls in flight and the queue, a call is refused at once", async () => {
      const server = await startWith(fake.url, { JUPITER_MAX_CONCURRENCY: "1", JUPITER_MAX_QUEUED: "0" });
      const client = clientOf(server);
      fake.fault = { kind: "delay", ms: 600, path: "/price/" };
      try {
        const slow = client.getTokenPrices({ mints: [SOL] });
        await sleep(100);
        await unavailable(client.getTokenPrices({ mints: [USDC] }), /too many Jupiter requests are waiting/);
        expect((await slow).data[0]?.unpriced).toBe(false);
        expect(await upstreamCount(server, "price", "overloaded")).toBe(1);
      } finally {
        fake.fault = undefined;
      }
    });

    it("the token list: verified tokens come from the verified list, refreshed in the background when stale", async () => {
      const server = await startWith(fake.url, { TOKEN_LIST_TTL_MS: "1000" });
      const client = clientOf(server);
      for (let i = 0; i < 50 && (await upstreamCount(server, "tokens_verified", "ok")) === 0; i++)
        await sleep(20);
      const searches = fake.requests.filter((r) => r.path === "/tokens/v2/search").length;
      const first = await client.getTokenMetadata({ mint: USDC });
      expect(first.data?.tags).toEqual(["verified", "stablecoin"]);
      // Held by the verified list: no search.
      expect(fake.requests.filter((r) => r.path === "/tokens/v2/search").length).toBe(searches);
      const at = fake.tokens.findIndex((t) => t.id === USDC);
      const listed = fake.tokens[at] as FakeToken;
      fake.tokens[at] = { ...listed, icon: "https://icons.example/usdc-new.png" };
      try {
        await sleep(1100);
        // Stale now: answered from the old list while one request refreshes it.
        expect((await client.getTokenMetadata({ mint: USDC })).data?.logoUri).toBe(listed.icon);
        let renewed = "";
        for (let i = 0; i < 50 && renewed !== "https://icons.example/usdc-new.png"; i++) {
          await sleep(20);
          renewed = (await client.getTokenMetadata({ mint: USDC })).data?.logoUri ?? "";
        }
        expect(renewed).toBe("https://icons.example/usdc-new.png");
        expect(await upstreamCount(server, "tokens_verified", "ok")).toBe(2);
      } finally {
        fake.tokens[at] = listed;
      }
    });

    it("a token list that cannot answer leaves prices served, with the catalog's symbols", async () => {
      const server = await startWith(fake.url);
      const bonk = catalog.tokens.find((t) => t.symbol === "BONK");
      const mint = newMint();
      fake.prices.set(mint, DOC_PRICES[USDC] as never);
      fake.prices.set(bonk?.mint ?? "", DOC_PRICES[USDC] as never);
      fake.fault = { kind: "status", status: 500, path: "/tokens/" };
      try {
        const { data } = await clientOf(server).getTokenPrices({ mints: [mint, bonk?.mint ?? ""] });
        expect(data.map((p) => [p.symbol, p.unpriced])).toEqual([
          ["", false],
          ["BONK", false],
        ]);
        expect(await upstreamCount(server, "tokens_search", "http_error")).toBe(1);
      } finally {
        fake.fault = undefined;
      }
    });
  });
});

const realUrl = process.env.JUPITER_API_URL_TEST;
if (realUrl === undefined || realUrl === "") {
  console.info(
    "Jupiter itself: skipped (set JUPITER_API_URL_TEST, and JUPITER_API_KEY_TEST if it needs a key, to run the shared tests against it)",
  );
}
describe.skipIf(realUrl === undefined || realUrl === "")("Jupiter itself (JUPITER_API_URL_TEST)", () => {
  sharedTests(() => ({
    url: realUrl ?? "",
    apiKey: process.env.JUPITER_API_KEY_TEST ?? "",
    fake: undefined,
  }));
});

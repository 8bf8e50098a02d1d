import * as http from "node:http";
import type { AddressInfo, Socket } from "node:net";

/**
 * A local HTTP server that speaks Jupiter's documented shapes: Price API v3 (`GET /price/v3?ids=`,
 * at most 50 ids, a map of mint to price entry, tokens without a reliable price left out) and
 * Tokens API v2 (`GET /tokens/v2/search?query=`, a symbol or name, or up to 100 comma-separated
 * mints; `GET /tokens/v2/tag?query=verified`). Entries are built like the examples in Jupiter's
 * docs (dev.jup.ag: api-reference/price/v3, guides/how-to-get-token-information). Tests set what
 * it knows, make it misbehave (`fault`), and read what it was asked (`requests`).
 */

/** A Price API v3 entry, as Jupiter documents it. */
export interface FakePrice {
  readonly usdPrice: number;
  readonly priceChange24h: number | null;
  readonly blockId: number;
  readonly decimals: number;
  readonly createdAt: string;
  readonly liquidity: number;
}

/** A Tokens API v2 entry (the documented fields; Jupiter sends more). */
export interface FakeToken {
  readonly id: string;
  readonly name: string;
  readonly symbol: string;
  readonly icon: string;
  readonly decimals: number;
  readonly isVerified: boolean;
  readonly tags: readonly string[];
  readonly organicScore?: number;
  readonly usdPrice?: number;
}

export type FakeFault =
  /** Answers this status (with Retry-After when given) and an error body. */
  (
    | { readonly kind: "status"; readonly status: number; readonly retryAfter?: string }
    /** Answers correctly after a delay. */
    | { readonly kind: "delay"; readonly ms: number }
    /** Answers 200 with a body that is not JSON. */
    | { readonly kind: "malformed" }
    /** Answers 200 with a JSON body of this many bytes. */
    | { readonly kind: "huge"; readonly bytes: number }
    /** Drops the connection without answering. */
    | { readonly kind: "reset" }
  ) & {
    /** Only requests whose path starts with this misbehave; undefined: every request. */
    readonly path?: string;
  };

export interface FakeRequest {
  readonly path: string;
  /** `ids` of a price request, or the mints of a search for mints. */
  readonly ids: readonly string[];
  /** `query` of a search or tag request. */
  readonly query: string;
  readonly apiKey: string | undefined;
}

export interface FakeJupiter {
  readonly url: string;
  readonly prices: Map<string, FakePrice>;
  readonly tokens: FakeToken[];
  /** Every request, in arrival order. */
  readonly requests: FakeRequest[];
  /** How requests are answered from now on; undefined: correctly. */
  fault: FakeFault | undefined;
  /** Price requests naming any of these mints. */
  priceRequestsFor(mints: readonly string[]): FakeRequest[];
  close(): Promise<void>;
}

/** From Jupiter's Price API v3 example. */
export const DOC_PRICES: Record<string, FakePrice> = {
  So11111111111111111111111111111111111111112: {
    createdAt: "2024-06-05T08:55:25.527Z",
    liquidity: 621679197.67,
    usdPrice: 147.48,
    blockId: 348004023,
    decimals: 9,
    priceChange24h: 1.29,
  },
  EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v: {
    createdAt: "2024-06-05T08:55:25.527Z",
    liquidity: 522175174.66,
    usdPrice: 0.9999,
    blockId: 348004025,
    decimals: 6,
    priceChange24h: -0.003,
  },
};

/** From Jupiter's Tokens API v2 example. */
export const DOC_TOKEN: FakeToken = {
  id: "JUPyiwrYJFskUPiHa7hkeR8VUtAeFoSYbKedZNsDvCN",
  name: "Jupiter",
  symbol: "JUP",
  icon: "https://static.jup.ag/jup/icon.png",
  decimals: 6,
  isVerified: true,
  organicScore: 98.08,
  usdPrice: 0.1424,
  tags: ["verified", "community", "strict"],
};

const MAX_PRICE_IDS = 50;
const MAX_SEARCH_MINTS = 100;
/** Results of a search by symbol or name, as Jupiter's default. */
const SEARCH_RESULTS = 20;

export async function startFakeJupiter(): Promise<FakeJupiter> {
  const prices = new Map<string, FakePrice>(Object.entries(DOC_PRICES));
  const tokens: FakeToken[] = [DOC_TOKEN];
  const requests: FakeRequest[] = [];
  const sockets = new Set<Socket>();
  const fake: FakeJupiter = {
    url: "",
    prices,
    tokens,
    requests,
    fault: undefined,
    priceRequestsFor: (mints) =>
      requests.filter((r) => r.path === "/price/v3" && r.ids.some((id) => mints.includes(id))),
    close: () =>
      new Promise((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };

  const answer = (res: http.ServerResponse, status: number, body: unknown) => {
    const text = JSON.stringify(body);
    res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
    res.end(text);
  };

  const respond = (url: URL, res: http.ServerResponse) => {
    const query = url.searchParams.get("query") ?? "";
    switch (url.pathname) {
      case "/price/v3": {
        const ids = (url.searchParams.get("ids") ?? "").split(",").filter((id) => id !== "");
        if (ids.length > MAX_PRICE_IDS) return answer(res, 400, { error: `at most ${MAX_PRICE_IDS} ids` });
        const body: Record<string, FakePrice> = {};
        for (const id of ids) {
          const price = prices.get(id);
          if (price !== undefined) body[id] = price;
        }
        return answer(res, 200, body);
      }
      case "/tokens/v2/search": {
        if (
          query.includes(",") ||
          tokens.some((t) => t.id === query) ||
          /^[1-9A-HJ-NP-Za-km-z]{32,44}$/.test(query)
        ) {
          const mints = query.split(",");
          if (mints.length > MAX_SEARCH_MINTS)
            return answer(res, 400, { error: `at most ${MAX_SEARCH_MINTS} mints` });
          return answer(
            res,
            200,
            tokens.filter((t) => mints.includes(t.id)),
          );
        }
        const wanted = query.toLowerCase();
        const found = tokens.filter(
          (t) => t.symbol.toLowerCase().includes(wanted) || t.name.toLowerCase().includes(wanted),
        );
        return answer(res, 200, found.slice(0, SEARCH_RESULTS));
      }
      case "/tokens/v2/tag":
        if (query !== "verified" && query !== "lst") return answer(res, 400, { error: "unknown tag" });
        return answer(
          res,
          200,
          tokens.filter((t) => (query === "verified" ? t.isVerified : t.tags.includes("lst"))),
        );
      default:
        return answer(res, 404, { error: "not found" });
    }
  };

  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://fake");
    const query = url.searchParams.get("query") ?? "";
    const ids =
      url.pathname === "/price/v3"
        ? (url.searchParams.get("ids") ?? "").split(",")
        : query.includes(",")
          ? query.split(",")
          : [];
    const apiKey = req.headers["x-api-key"];
    requests.push({
      path: url.pathname,
      ids,
      query,
      apiKey: typeof apiKey === "string" ? apiKey : undefined,
    });
    const fault =
      fake.fault?.path === undefined || url.pathname.startsWith(fake.fault.path) ? fake.fault : undefined;
    switch (fault?.kind) {
      case undefined:
        return respond(url, res);
      case "status":
        res.writeHead(fault.status, {
          "content-type": "application/json",
          ...(fault.retryAfter === undefined ? {} : { "retry-after": fault.retryAfter }),
        });
        return res.end(JSON.stringify({ error: `status ${fault.status}` }));
      case "delay": {
        const timer = setTimeout(() => respond(url, res), fault.ms);
        res.on("close", () => clearTimeout(timer));
        return;
      }
      case "malformed":
        res.writeHead(200, { "content-type": "application/json" });
        return res.end('{"So11111111111111111111111111111111111111112": {"usdPrice": 1');
      case "huge": {
        // Valid JSON, streamed without a Content-Length, so only reading it reveals its size.
        res.writeHead(200, { "content-type": "application/json" });
        const chunk = `"${"x".repeat(64 * 1024 - 3)}",`;
        res.write('{"padding": [');
        let sent = 0;
        const pump = () => {
          while (sent < fault.bytes) {
            sent += chunk.length;
            if (!res.write(chunk)) return void res.once("drain", pump);
          }
          res.end('""]}');
        };
        res.on("error", () => {});
        return pump();
      }
      case "reset":
        return req.socket.destroy();
    }
  });
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  (fake as { url: string }).url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return fake;
}

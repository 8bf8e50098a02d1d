import * as http from "node:http";
import type { AddressInfo, Socket } from "node:net";

/**
 * A local HTTP server that speaks Pyth Hermes' documented shape of
 * `GET /v2/updates/price/latest?ids[]=…&parsed=true` (docs.pyth.network,
 * api-reference/pyth-core/hermes/latest_price_updates): `{binary: {encoding, data}, parsed: [{id,
 * price: {price, conf, expo, publish_time}, ema_price, metadata}]}`, ids as 64 hex digits without
 * 0x, `price` and `conf` as strings. An id it does not know fails the request (404) unless
 * `ignore_invalid_price_ids=true`, then it is left out. Tests set its feeds, make it misbehave
 * (`fault`), and read what it was asked (`requests`).
 */

/** A feed's latest price, as Hermes' `price` object holds it. */
export interface FakeHermesPrice {
  readonly price: string;
  readonly conf: string;
  readonly expo: number;
  /** Seconds since the epoch. */
  readonly publish_time: number;
}

export type FakeHermesFault =
  | { readonly kind: "status"; readonly status: number }
  | { readonly kind: "delay"; readonly ms: number }
  /** 200 with a body that is not JSON. */
  | { readonly kind: "malformed" }
  /** 200 with this JSON body instead of the answer. */
  | { readonly kind: "body"; readonly body: unknown }
  /** 200 with a valid JSON body of this many bytes, without a Content-Length. */
  | { readonly kind: "huge"; readonly bytes: number }
  /** Drops the connection without answering. */
  | { readonly kind: "reset" };

export interface FakeHermesRequest {
  readonly path: string;
  /** The `ids[]` asked, as sent. */
  readonly ids: readonly string[];
  readonly parsed: string | null;
  readonly ignoreInvalid: string | null;
}

export interface FakeHermes {
  readonly url: string;
  /** Feed id (64 lowercase hex digits) -> its latest price, or what makes it at each request (a live feed). */
  readonly feeds: Map<string, FakeHermesPrice | (() => FakeHermesPrice)>;
  readonly requests: FakeHermesRequest[];
  fault: FakeHermesFault | undefined;
  close(): Promise<void>;
}

/** The BTC/USD entry of Pyth's example answer. */
export const DOC_FEED_ID = "e62df6c8b4a85fe1a67db44dc12de5db330f7ac66b72dc658afedf0f4a415b43";
export const DOC_PRICE: FakeHermesPrice = {
  conf: "509500001",
  expo: -8,
  price: "2920679499999",
  publish_time: 1717632000,
};

/** A price of `usd` (to 8 decimals) published at `at`, with a confidence of 0.1 % of it. */
export function hermesPrice(usd: number, at: Date = new Date()): FakeHermesPrice {
  const units = Math.round(usd * 1e8);
  return {
    price: String(units),
    conf: String(Math.round(units / 1000)),
    expo: -8,
    publish_time: Math.floor(at.getTime() / 1000),
  };
}

export async function startFakeHermes(): Promise<FakeHermes> {
  const feeds = new Map<string, FakeHermesPrice | (() => FakeHermesPrice)>([[DOC_FEED_ID, DOC_PRICE]]);
  const requests: FakeHermesRequest[] = [];
  const sockets = new Set<Socket>();
  const fake: FakeHermes = {
    url: "",
    feeds,
    requests,
    fault: undefined,
    close: () =>
      new Promise((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };

  const answer = (res: http.ServerResponse, status: number, body: unknown) => {
    const text = typeof body === "string" ? body : JSON.stringify(body);
    res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
    res.end(text);
  };

  const respond = (url: URL, res: http.ServerResponse) => {
    if (url.pathname !== "/v2/updates/price/latest") return answer(res, 404, "Not Found");
    const ids = url.searchParams.getAll("ids[]").map((id) => id.toLowerCase().replace(/^0x/, ""));
    if (ids.length === 0) return answer(res, 400, "Missing ids");
    const known = ids.filter((id) => feeds.has(id));
    if (known.length < ids.length && url.searchParams.get("ignore_invalid_price_ids") !== "true") {
      return answer(res, 404, "Price ids not found");
    }
    const prices = new Map(
      known.map((id) => {
        const feed = feeds.get(id) as FakeHermesPrice | (() => FakeHermesPrice);
        return [id, typeof feed === "function" ? feed() : feed];
      }),
    );
    const at = (id: string) => prices.get(id) as FakeHermesPrice;
    return answer(res, 200, {
      binary: { encoding: url.searchParams.get("encoding") ?? "hex", data: ["UE5BVQEAAAADuAEAAAAD"] },
      parsed:
        url.searchParams.get("parsed") === "false"
          ? undefined
          : known.map((id) => ({
              id,
              price: at(id),
              ema_price: at(id),
              metadata: {
                slot: 85480034,
                proof_available_time: at(id).publish_time,
                prev_publish_time: at(id).publish_time - 1,
              },
            })),
    });
  };

  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://fake");
    requests.push({
      path: url.pathname,
      ids: url.searchParams.getAll("ids[]"),
      parsed: url.searchParams.get("parsed"),
      ignoreInvalid: url.searchParams.get("ignore_invalid_price_ids"),
    });
    const fault = fake.fault;
    switch (fault?.kind) {
      case undefined:
        return respond(url, res);
      case "status":
        return answer(res, fault.status, `status ${fault.status}`);
      case "delay": {
        const timer = setTimeout(() => respond(url, res), fault.ms);
        res.on("close", () => clearTimeout(timer));
        return;
      }
      case "malformed":
        res.writeHead(200, { "content-type": "application/json" });
        return res.end('{"parsed": [{"id": "e62d');
      case "body":
        return answer(res, 200, fault.body);
      case "huge": {
        res.writeHead(200, { "content-type": "application/json" });
        const chunk = `"${"x".repeat(64 * 1024 - 3)}",`;
        res.write('{"parsed": [');
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

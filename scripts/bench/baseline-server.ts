/**
 * Baseline servers for the benchmark: the least work that can produce the same bytes the service
 * answers, so `scripts/bench.ts` can print the service's throughput as a fraction of it.
 *
 *   node scripts/bench/baseline-server.ts http   PORT BODY_FILE   — node:http, fixed JSON body
 *   node scripts/bench/baseline-server.ts http2  PORT BODY_FILE   — node:http2, fixed gRPC frame + trailers
 *   node scripts/bench/baseline-server.ts plain  PORT            — node:http JSON handler doing the service's work
 *   node scripts/bench/baseline-server.ts grpcjs PORT            — @grpc/grpc-js doing the service's work
 *
 * "The service's work" is GetTokenPrices: the same token queries over the same catalog, with the
 * peer's own (de)serialization: JSON.parse and JSON.stringify, or grpc-js with protobuf.js.
 */
import { readFileSync } from "node:fs";
import * as http from "node:http";
import * as http2 from "node:http2";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { loadCatalog } from "../../src/token/catalog.ts";
import { createCatalogPriceSource } from "../../src/token/catalog-price-source.ts";
import { createCatalogTokenList } from "../../src/token/catalog-token-list.ts";
import { createPriceWatch } from "../../src/token/price-watch.ts";
import { createTokenQueries } from "../../src/token/token-queries.ts";
import type { TokenPrice } from "../../src/token/token-source.ts";

const [kind, portText, bodyFile] = process.argv.slice(2);
const port = Number(portText);

if (kind === "http") {
  const body = readFileSync(bodyFile as string);
  http
    .createServer((req, res) => {
      req.resume();
      req.on("end", () => {
        res.writeHead(200, { "content-type": "application/json", "content-length": body.length });
        res.end(body);
      });
    })
    .listen(port, "127.0.0.1", () => console.log("ready"));
} else if (kind === "http2") {
  const frame = readFileSync(bodyFile as string);
  const server = http2.createServer();
  server.on("stream", (stream) => {
    stream.resume();
    stream.on("end", () => {
      stream.respond({ ":status": 200, "content-type": "application/grpc+proto" }, { waitForTrailers: true });
      stream.on("wantTrailers", () => stream.sendTrailers({ "grpc-status": "0" }));
      stream.end(frame);
    });
  });
  server.listen(port, "127.0.0.1", () => console.log("ready"));
} else if (kind === "plain") {
  const queries = catalogQueries();
  http
    .createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (chunk: Buffer) => chunks.push(chunk));
      req.on("end", async () => {
        const request = JSON.parse(Buffer.concat(chunks).toString("utf8") || "{}") as Record<string, string>;
        const data = await queries.getPrices({
          mint: request.mint ?? "",
          symbol: request.symbol ?? "",
          mints: [],
        });
        const body = JSON.stringify({ success: true, data });
        res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
        res.end(body);
      });
    })
    .listen(port, "127.0.0.1", () => console.log("ready"));
} else if (kind === "grpcjs") {
  const definition = protoLoader.loadSync("token/v1/token.proto", {
    includeDirs: [
      new URL("../../proto", import.meta.url).pathname,
      // google/api/annotations.proto, imported by the contract for its REST rules.
      new URL("../../node_modules/google-proto-files", import.meta.url).pathname,
    ],
  });
  const loaded = grpc.loadPackageDefinition(definition) as unknown as {
    token: { v1: { TokenService: { service: grpc.ServiceDefinition } } };
  };
  const queries = catalogQueries();
  // WatchTokenPrices as plainly as grpc-js does it, over the same shared poll of the same walking
  // catalog prices (CATALOG_PRICE_TICK_MS, PRICE_WATCH_INTERVAL_MS), so it sends the same messages.
  const watch = createPriceWatch({
    prices: createCatalogPriceSource({
      catalog: loadCatalog(),
      tickMs: Number(process.env.CATALOG_PRICE_TICK_MS ?? 0),
    }),
    intervalMs: Number(process.env.PRICE_WATCH_INTERVAL_MS ?? 1000),
  });
  const wire = (p: TokenPrice) => ({
    ...p,
    asOf: { seconds: Math.floor(p.asOf.getTime() / 1000), nanos: (p.asOf.getTime() % 1000) * 1e6 },
  });
  const server = new grpc.Server();
  server.addService(loaded.token.v1.TokenService.service, {
    WatchTokenPrices(call: grpc.ServerWritableStream<{ mints: string[] }, unknown>) {
      const send = (prices: readonly TokenPrice[]) => call.write({ success: true, data: prices.map(wire) });
      watch
        .subscribe(
          call.request.mints,
          (changed) => send(changed),
          (error) => call.destroy(error as Error),
        )
        .then((subscription) => {
          send(subscription.initial);
          call.on("cancelled", () => subscription.close());
        });
    },
    GetTokenPrices(
      call: grpc.ServerUnaryCall<{ mint: string; symbol: string }, unknown>,
      callback: grpc.sendUnaryData<unknown>,
    ) {
      queries
        .getPrices({ mint: call.request.mint ?? "", symbol: call.request.symbol ?? "", mints: [] })
        .then((data) => callback(null, { success: true, data }));
    },
  });
  server.bindAsync(`127.0.0.1:${port}`, grpc.ServerCredentials.createInsecure(), () => console.log("ready"));
} else {
  console.error("usage: baseline-server.ts http|http2|plain|grpcjs PORT [BODY_FILE]");
  process.exit(2);
}

/** The token queries on the catalog's prices, as the service's GetTokenPrices runs them (no chain). */
function catalogQueries() {
  const unused = () => Promise.reject(new Error("the baseline serves prices only"));
  const catalog = loadCatalog();
  return createTokenQueries({
    prices: createCatalogPriceSource({ catalog }),
    tokenList: createCatalogTokenList({ catalog }),
    source: { getMetadata: unused, listTransactions: unused },
  });
}

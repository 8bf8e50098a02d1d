/**
 * Moves a token's price on the embedded local chain, for developers and demos (a trigger agent
 * that should fire, a swap out of its band): the chain's cheatcode `surfnet_setTokenPrice`
 * rebalances the token's local pools so that their mid price is the new price, and the service
 * (`npm start` without SOLANA_RPC_URL or JUPITER_API_URL) prices the token from those pools.
 *
 *   npm run move-price -- SOL 180        (a catalog symbol or a mint, then a price in US dollars)
 *
 * RPC_URL names the chain's JSON-RPC (default http://127.0.0.1:8899, the embedded chain's port);
 * only this machine's: a cluster is never asked. The chain must serve cheatcodes (the default
 * outside NODE_ENV=production; LOCAL_SOLANA_CHEATCODES). Prints the chain's answer as one JSON
 * line: the price the pools now give and each pool's new reserve.
 */
import { loadCatalog } from "../src/token/catalog.ts";

const USAGE = "usage: npm run move-price -- SYMBOL_OR_MINT PRICE_USD   (e.g. npm run move-price -- SOL 180)";
const LOOPBACK = new Set(["127.0.0.1", "localhost", "[::1]", "::1"]);

function fail(message: string, code = 1): never {
  process.stderr.write(`${message}\n`);
  process.exit(code);
}

const [token, priceText, ...rest] = process.argv.slice(2);
if (token === undefined || priceText === undefined || rest.length > 0) fail(USAGE, 2);
const price = Number(priceText);
if (!/^\d+(\.\d+)?(e-?\d+)?$/i.test(priceText) || !(price > 0))
  fail(`${priceText} is not a price above 0\n${USAGE}`, 2);
const catalog = loadCatalog();
const listed = catalog.tokens.find((t) => t.symbol.toLowerCase() === token.toLowerCase() || t.mint === token);
if (listed === undefined && !/^[1-9A-HJ-NP-Za-km-z]{32,44}$/.test(token))
  fail(
    `${token} is neither a catalog symbol (${catalog.tokens.map((t) => t.symbol).join(", ")}) nor a mint`,
    2,
  );
const mint = listed?.mint ?? token;

const url = new URL(process.env.RPC_URL ?? "http://127.0.0.1:8899");
if (!LOOPBACK.has(url.hostname))
  fail(`move-price moves prices on the local chain of this machine only; RPC_URL names ${url.hostname}`, 2);

let response: Response;
try {
  response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "surfnet_setTokenPrice",
      params: [mint, priceText],
    }),
  });
} catch (error) {
  fail(
    `the local chain at ${url.origin} cannot be reached (is \`npm start\` running?): ${(error as Error).message}`,
  );
}
if (!response.ok) fail(`the local chain at ${url.origin} answered HTTP ${response.status}`);
const answer = (await response.json()) as {
  result?: { value: { price: number; pools: unknown[] } };
  error?: { code: number; message: string };
};
if (answer.error !== undefined) {
  fail(
    answer.error.code === -32601
      ? `the local chain at ${url.origin} serves no cheatcodes (LOCAL_SOLANA_CHEATCODES=false, or NODE_ENV=production): its prices cannot be moved`
      : `the local chain refused: ${answer.error.message}`,
  );
}
const value = answer.result?.value;
if (value === undefined) fail(`the local chain answered no result: ${JSON.stringify(answer).slice(0, 300)}`);
process.stdout.write(`${JSON.stringify({ mint, symbol: listed?.symbol ?? "", ...value })}\n`);

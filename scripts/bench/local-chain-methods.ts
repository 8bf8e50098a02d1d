/**
 * Figures for the local chain's scanning and block methods: latency of each over HTTP, one request
 * at a time, on the seeded genesis (16 mints, six wallets, a day of history). Prints figures;
 * asserts nothing.
 *
 *   node scripts/bench/local-chain-methods.ts      (BENCH_CALLS=200 per method)
 */
import { performance } from "node:perf_hooks";
import { startLocalChain } from "../../src/local-chain/index.ts";
import { loadCatalog } from "../../src/token/catalog.ts";

const calls = Number(process.env.BENCH_CALLS ?? 200);
const catalog = loadCatalog();
const usdc = catalog.tokens.find((t) => t.symbol === "USDC")?.mint as string;
const TOKEN = "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA";
const local = await startLocalChain({ catalog, port: 0, statePath: undefined, slotMs: 400 });
const url = local.url as string;

async function call(method: string, params: unknown[]): Promise<{ result?: unknown; bytes: number }> {
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
  });
  const text = await response.text();
  const body = JSON.parse(text) as { result?: unknown; error?: unknown };
  if (body.error !== undefined) throw new Error(`${method}: ${JSON.stringify(body.error)}`);
  return { result: body.result, bytes: text.length };
}

const history = (await call("getSignaturesForAddress", [usdc, { limit: 1 }])).result as {
  signature: string;
  slot: number;
}[];
const { signature, slot } = history[0] as { signature: string; slot: number };
const owner = ((await call("getTokenLargestAccounts", [usdc])).result as { value: { address: string }[] })
  .value[0]?.address as string;
const first = (await call("getFirstAvailableBlock", [])).result as number;

const cases: [name: string, method: string, params: unknown[]][] = [
  [
    "getProgramAccounts token, dataSize+memcmp(mint), jsonParsed",
    "getProgramAccounts",
    [TOKEN, { encoding: "jsonParsed", filters: [{ dataSize: 165 }, { memcmp: { offset: 0, bytes: usdc } }] }],
  ],
  ["getTokenLargestAccounts", "getTokenLargestAccounts", [usdc]],
  ["getBlock full json", "getBlock", [slot, { maxSupportedTransactionVersion: 0 }]],
  [
    "getBlock full jsonParsed",
    "getBlock",
    [slot, { maxSupportedTransactionVersion: 0, encoding: "jsonParsed" }],
  ],
  ["getTransaction json", "getTransaction", [signature, { maxSupportedTransactionVersion: 0 }]],
  [
    "getTransaction jsonParsed",
    "getTransaction",
    [signature, { maxSupportedTransactionVersion: 0, encoding: "jsonParsed" }],
  ],
  ["getBlocks 100,000 slots", "getBlocks", [first, first + 100_000]],
  ["getRecentPrioritizationFees", "getRecentPrioritizationFees", [[owner]]],
  ["getSupply", "getSupply", []],
  ["getClusterNodes", "getClusterNodes", []],
];

console.log(
  `local chain methods, ${calls} sequential calls each over HTTP (owner of the largest USDC account: ${owner})`,
);
for (const [name, method, params] of cases) {
  const times: number[] = [];
  let bytes = 0;
  for (let i = 0; i < calls; i++) {
    const start = performance.now();
    bytes = (await call(method, params)).bytes;
    times.push(performance.now() - start);
  }
  times.sort((a, b) => a - b);
  const at = (q: number) =>
    (times[Math.min(times.length - 1, Math.floor(q * times.length))] as number).toFixed(2);
  console.log(`  ${name.padEnd(62)} p50 ${at(0.5)} ms  p99 ${at(0.99)} ms  answer ${bytes} bytes`);
}
await local.close();

/**
 * Figures for the local chain's token methods with many token accounts on the chain (issue 42):
 * getProgramAccounts(Token) with a mint or an owner memcmp, getTokenAccountsByOwner,
 * getTokenAccountsByDelegate and getTokenLargestAccounts, at 3,000 and 30,000 token accounts set
 * by cheatcode (spread over the catalog's mints, one new owner each; one in ten has a delegate).
 * Latency over HTTP, one request at a time. The time budget is lifted so that what is measured is
 * the work, not the refusal. Prints figures; asserts nothing.
 *
 *   node scripts/bench/local-chain-token-methods.ts   (BENCH_ACCOUNTS=3000,30000; BENCH_CALLS=20)
 */
import { randomBytes } from "node:crypto";
import { performance } from "node:perf_hooks";
import { getBase58Decoder } from "@solana/kit";
import { startLocalChain } from "../../src/local-chain/index.ts";
import { loadCatalog } from "../../src/token/catalog.ts";

const sizes = (process.env.BENCH_ACCOUNTS ?? "3000,30000").split(",").map(Number);
const calls = Number(process.env.BENCH_CALLS ?? 20);
const catalog = loadCatalog();
const mints = catalog.tokens.map((t) => t.mint);
const usdc = catalog.tokens.find((t) => t.symbol === "USDC")?.mint as string;
const TOKEN = "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA";
const address = () => getBase58Decoder().decode(randomBytes(32));

for (const size of sizes) {
  const local = await startLocalChain({
    catalog,
    port: 0,
    statePath: undefined,
    slotMs: 400,
    limits: { maxRequestMs: 600_000 } as never,
  });
  const url = local.url as string;
  const post = async (body: unknown): Promise<string> => {
    const response = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    return response.text();
  };
  const delegate = address();
  let owner = "";
  const seeding = performance.now();
  for (let done = 0; done < size; done += 100) {
    const batch = Array.from({ length: Math.min(100, size - done) }, (_, i) => {
      const n = done + i;
      const holder = address();
      if (n === 0) owner = holder;
      return {
        jsonrpc: "2.0",
        id: i,
        method: "surfnet_setTokenAccount",
        params: [
          holder,
          mints[n % mints.length],
          { amount: 1 + n, ...(n % 10 === 0 ? { delegate, delegatedAmount: 1 } : {}) },
        ],
      };
    });
    const answers = JSON.parse(await post(batch)) as { error?: unknown }[];
    const failed = answers.find((a) => a.error !== undefined);
    if (failed !== undefined) throw new Error(`seeding: ${JSON.stringify(failed.error)}`);
  }
  console.log(
    `${size} token accounts (${Math.round(size / mints.length)} per mint), set in ${((performance.now() - seeding) / 1000).toFixed(1)} s; ${calls} sequential calls each over HTTP`,
  );
  const cases: [name: string, method: string, params: unknown[]][] = [
    [
      "getProgramAccounts token, dataSize+memcmp(mint), jsonParsed",
      "getProgramAccounts",
      [
        TOKEN,
        { encoding: "jsonParsed", filters: [{ dataSize: 165 }, { memcmp: { offset: 0, bytes: usdc } }] },
      ],
    ],
    [
      "getProgramAccounts token, dataSize+memcmp(owner), base64",
      "getProgramAccounts",
      [TOKEN, { encoding: "base64", filters: [{ dataSize: 165 }, { memcmp: { offset: 32, bytes: owner } }] }],
    ],
    [
      "getTokenAccountsByOwner(programId), jsonParsed",
      "getTokenAccountsByOwner",
      [owner, { programId: TOKEN }, { encoding: "jsonParsed" }],
    ],
    [
      "getTokenAccountsByDelegate(programId), jsonParsed",
      "getTokenAccountsByDelegate",
      [delegate, { programId: TOKEN }, { encoding: "jsonParsed" }],
    ],
    ["getTokenLargestAccounts(USDC)", "getTokenLargestAccounts", [usdc]],
  ];
  for (const [name, method, params] of cases) {
    const times: number[] = [];
    let bytes = 0;
    for (let i = 0; i < calls; i++) {
      const start = performance.now();
      const text = await post({ jsonrpc: "2.0", id: 1, method, params });
      times.push(performance.now() - start);
      if (text.includes('"error"')) throw new Error(`${name}: ${text.slice(0, 300)}`);
      bytes = text.length;
    }
    times.sort((a, b) => a - b);
    const at = (q: number) =>
      (times[Math.min(times.length - 1, Math.floor(q * times.length))] as number).toFixed(1);
    console.log(
      `  ${name.padEnd(56)} p50 ${at(0.5).padStart(8)} ms  p99 ${at(0.99).padStart(8)} ms  answer ${bytes} bytes`,
    );
  }
  await local.close();
}

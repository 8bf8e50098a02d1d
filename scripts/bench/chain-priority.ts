/**
 * By hand, not in the suite: PrepareApproval's latency (one chain read by the service, through
 * its in-process transport to the chain's worker) while clients flood the chain's public JSON-RPC
 * port with batches of getProgramAccounts, as issue 53's N6 measured it. Prints figures; asserts
 * nothing.
 *
 *   node scripts/bench/chain-priority.ts   (CONNECTIONS=32, BATCH=100, ROUNDS=3 batches per connection)
 */
import { fork } from "node:child_process";
import { once } from "node:events";
import { generateKeyPairSigner } from "@solana/kit";
import { loadCatalog } from "../../src/token/catalog.ts";
import { startServer } from "../../test/support/start-server.ts";

const CONNECTIONS = Number(process.env.CONNECTIONS ?? 32);
const BATCH = Number(process.env.BATCH ?? 100);
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const USDC = loadCatalog().tokens.find((t) => t.symbol === "USDC")?.mint as string;

const server = await startServer();
const chainUrl = server.localChain?.url as string;
const rest = async (method: string, path: string, body?: object) => {
  const res = await fetch(`${server.baseUrl}${path}`, {
    method,
    headers: body === undefined ? {} : { "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
};
const rpc = async (method: string, params: unknown[]) => {
  const res = await fetch(chainUrl, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
  });
  return (await res.json()) as Record<string, unknown>;
};

const wallet = (await generateKeyPairSigner()).address;
await rpc("surfnet_setTokenAccount", [wallet, USDC, { amount: 1_000_000 }]);
const created = await rest("POST", "/v1/agents", {
  type: "transfer",
  config: {
    source: wallet,
    destination: (await generateKeyPairSigner()).address,
    amount: 1,
    token: "USDC",
    schedule: "daily",
  },
});
const agentId = (created.json.data as { agentId: string }).agentId;
const prepare = async () => {
  const started = performance.now();
  const { status } = await rest("POST", `/v1/agents/${agentId}:prepareApproval`, { allowance: 5 });
  if (status !== 200) throw new Error(`PrepareApproval answered ${status}`);
  return performance.now() - started;
};
const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number;
};

for (let i = 0; i < 5; i++) await prepare();
const idle: number[] = [];
for (let i = 0; i < 20; i++) idle.push(await prepare());

// The flood comes from a process of its own, as the clients did: reading its answers must
// not take the service's thread.
let flooding = true;
const floodStarted = performance.now();
const flooder = fork(new URL("./chain-flood.ts", import.meta.url), [chainUrl], {
  env: { ...process.env, CONNECTIONS: String(CONNECTIONS), BATCH: String(BATCH), ROUNDS: String(ROUNDS) },
});
const flood = once(flooder, "exit").then(() => {
  flooding = false;
});
const loaded: number[] = [];
while (flooding) loaded.push(await prepare());
await flood;
const floodMs = performance.now() - floodStarted;
await server.close();

const row = (name: string, values: number[]) =>
  console.log(
    `${name}: n=${values.length} p50=${percentile(values, 50).toFixed(1)} ms p99=${percentile(values, 99).toFixed(1)} ms max=${Math.max(...values).toFixed(1)} ms`,
  );
row("PrepareApproval, idle chain", idle);
row(`PrepareApproval, ${CONNECTIONS} connections x ${ROUNDS} batches of ${BATCH} getProgramAccounts`, loaded);
console.log(`flood took ${(floodMs / 1000).toFixed(1)} s; goal: max <= 150 ms`);

/**
 * The flood of scripts/bench/chain-priority.ts, in a process of its own: CONNECTIONS keep-alive
 * connections to the chain's JSON-RPC port (argv[2]), each sending ROUNDS batches of BATCH
 * getProgramAccounts of the Token program (every token account, base64), one after another.
 */
import * as http from "node:http";

const url = process.argv[2] as string;
const CONNECTIONS = Number(process.env.CONNECTIONS ?? 32);
const BATCH = Number(process.env.BATCH ?? 100);
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const TOKEN_PROGRAM = "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA";

const body = JSON.stringify(
  Array.from({ length: BATCH }, (_, id) => ({
    jsonrpc: "2.0",
    id,
    method: "getProgramAccounts",
    params: [TOKEN_PROGRAM, { encoding: "base64" }],
  })),
);
const agent = new http.Agent({ keepAlive: true, maxSockets: CONNECTIONS });
const post = () =>
  new Promise<void>((resolve, reject) => {
    const req = http.request(
      url,
      { method: "POST", agent, headers: { "content-type": "application/json" } },
      (res) => {
        res.resume();
        res.on("end", resolve);
      },
    );
    req.on("error", reject);
    req.end(body);
  });
await Promise.all(
  Array.from({ length: CONNECTIONS }, async () => {
    for (let round = 0; round < ROUNDS; round++) await post();
  }),
);
agent.destroy();

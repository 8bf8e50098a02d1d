/**
 * A first swap agent, end to end, as its owner does it: a wallet made and funded on the embedded
 * local chain, a swap agent (USDC into JUP) created over REST, its approval signed by the wallet,
 * three swaps, the wallet's balances before and after, then the agent paused and the approval
 * revoked by the wallet itself.
 *
 *   SCHEDULE_TIME_SCALE=1200 npm start          # in one terminal: an hourly agent runs every 3 s
 *   SWAP_AGENT=$(npx node examples/first-swap-agent.ts)
 *
 * On `npm start` (the embedded chain, JUPITER_SWAP_URL unset) the swaps are routed by local pools
 * on that development chain, not by Jupiter: real token accounts, priced at the service's fixed
 * catalog prices. The agent's `notice` says so.
 *
 * Progress goes to stderr, the agent's id to stdout. Settings (all optional):
 *   API_URL  the service            (http://localhost:8080)
 *   RPC_URL  its chain's JSON-RPC   (http://127.0.0.1:8899, the embedded local chain)
 *   API_KEY  a key, when the service requires keys (an HTTP 401 means: set API_KEY)
 *
 * Outside this repository the script needs `npm install @solana/kit @solana-program/token` and
 * Node 24 (or `npx tsx`), in a project whose package.json has "type": "module".
 */
import {
  type Address,
  appendTransactionMessageInstruction,
  createSolanaRpc,
  createTransactionMessage,
  generateKeyPairSigner,
  getBase64EncodedWireTransaction,
  getBase64Encoder,
  getTransactionDecoder,
  lamports,
  pipe,
  type Signature,
  setTransactionMessageFeePayerSigner,
  setTransactionMessageLifetimeUsingBlockhash,
  signTransaction,
  signTransactionMessageWithSigners,
} from "@solana/kit";
import { findAssociatedTokenPda, getRevokeInstruction, TOKEN_PROGRAM_ADDRESS } from "@solana-program/token";

const API_URL = process.env.API_URL ?? "http://localhost:8080";
const RPC_URL = process.env.RPC_URL ?? "http://127.0.0.1:8899";
const API_KEY = process.env.API_KEY;
/** Mainnet mints: the embedded chain holds them at their real addresses. */
const USDC = "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v" as Address;
const JUP = "JUPyiwrYJFskUPiHa7hkeR8VUtAeFoSYbKedZNsDvCN" as Address;
const SWAPS = 3;
/** 1.5 USDC a swap, in base units (USDC has 6 decimals). */
const AMOUNT = 1.5;
const AMOUNT_UNITS = 1_500_000n;
const WAIT_MS = Number(process.env.WAIT_SECONDS ?? 60) * 1000;

type Json = Record<string, unknown>;
const say = (line: string) => process.stderr.write(`${line}\n`);
const rpc = createSolanaRpc(RPC_URL);

/** A REST call to the service: the envelope's `data`, or an error with the service's message. */
async function api(method: string, path: string, body?: Json): Promise<Json> {
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (API_KEY !== undefined) headers.authorization = `Bearer ${API_KEY}`;
  const res = await fetch(`${API_URL}${path}`, {
    method,
    headers,
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const json = (await res.json()) as Json;
  if (res.status === 401)
    throw new Error(`${method} ${path}: HTTP 401: this service requires a key: set API_KEY`);
  if (!res.ok) throw new Error(`${method} ${path}: HTTP ${res.status} ${json.code}: ${json.message}`);
  return json.data as Json;
}

/** A JSON-RPC method kit has no typed call for: surfpool's cheatcodes, which the local chain serves. */
async function cheatcode(method: string, params: unknown[]): Promise<void> {
  const res = await fetch(RPC_URL, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
  });
  const json = (await res.json()) as { error?: { message: string } };
  if (json.error !== undefined) throw new Error(`${method}: ${json.error.message}`);
}

/** Waits until the chain has confirmed the signature, by polling (a WebSocket subscription would do too). */
async function confirmed(signature: Signature): Promise<void> {
  for (let i = 0; i < 100; i++) {
    const [status] = (await rpc.getSignatureStatuses([signature]).send()).value;
    if (status?.err) throw new Error(`${signature} failed: ${JSON.stringify(status.err)}`);
    if (status?.confirmationStatus === "confirmed" || status?.confirmationStatus === "finalized") return;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`${signature} was not confirmed within 20 s`);
}

/** A token account's balance in base units, as the chain has it (0 when it does not exist yet). */
async function units(account: Address): Promise<bigint> {
  const { value } = await rpc.getAccountInfo(account, { encoding: "jsonParsed" }).send();
  const data = value?.data as { parsed?: { info?: { tokenAmount?: { amount: string } } } } | undefined;
  return BigInt(data?.parsed?.info?.tokenAmount?.amount ?? "0");
}
const ata = async (owner: Address, mint: Address) =>
  (await findAssociatedTokenPda({ owner, mint, tokenProgram: TOKEN_PROGRAM_ADDRESS }))[0];
const show = (value: bigint) => (Number(value) / 1e6).toFixed(6);

// 1. A wallet. Only this script ever holds its key.
const wallet = await generateKeyPairSigner();
const walletUsdc = await ata(wallet.address, USDC);
const walletJup = await ata(wallet.address, JUP);
say(`1. wallet ${wallet.address}`);

// 2. Funds on the embedded chain: SOL for the approval's fee, and 100 USDC (in base units).
await confirmed(await rpc.requestAirdrop(wallet.address, lamports(1_000_000_000n)).send());
await cheatcode("surfnet_setTokenAccount", [wallet.address, USDC, { amount: 100_000_000 }]);
const before = { usdc: await units(walletUsdc), jup: await units(walletJup) };
say(`2. funded: 1 SOL; before: ${show(before.usdc)} USDC, ${show(before.jup)} JUP`);

// 3. The agent: 1.5 USDC into JUP every hour, accepting at most 1% below the quote.
const created = (await api("POST", "/v1/agents", {
  type: "swap",
  config: {
    wallet: wallet.address,
    inputToken: "USDC",
    outputToken: "JUP",
    amount: AMOUNT,
    schedule: "hourly",
    slippageBps: 100,
  },
})) as { agentId: string; notice?: string };
const { agentId } = created;
const pending = await api("GET", `/v1/agents/${agentId}`);
say(`3. agent ${agentId} is ${pending.status}: ${pending.pendingReason}`);
say(`   notice: ${created.notice}`);

// 4. The approval of the input token, capped at exactly three swaps: 4.5 USDC.
const approval = (await api("POST", `/v1/agents/${agentId}:prepareApproval`, {
  allowance: AMOUNT * SWAPS,
})) as { transaction: string; delegate: string };
const unsigned = getTransactionDecoder().decode(getBase64Encoder().encode(approval.transaction));
const signed = await signTransaction([wallet.keyPair], unsigned);
await confirmed(
  await rpc.sendTransaction(getBase64EncodedWireTransaction(signed), { encoding: "base64" }).send(),
);
say(`4. approved delegate ${approval.delegate} for ${AMOUNT * SWAPS} USDC`);

// 5. Three swaps, each with its quote and what it got.
const deadline = Date.now() + WAIT_MS;
const swaps: Json[] = [];
const shown = new Set<string>();
while (swaps.length < SWAPS) {
  const { runs } = (await api("GET", `/v1/agents/${agentId}/runs?limit=100`)) as { runs: Json[] };
  for (const run of runs.toReversed()) {
    if (shown.has(String(run.runId)) || swaps.length >= SWAPS) continue;
    shown.add(String(run.runId));
    const result = run.result as Json;
    if (run.outcome === "succeeded") {
      swaps.push(result);
      say(
        `5. swap ${swaps.length}: ${result.inAmount} USDC for ${result.outAmount} JUP at ${result.price} (minimum ${Number(result.minimumOutUnits) / 1e6}, route ${(result.routeLabels as string[]).join(", ")}) in ${result.signature}`,
      );
    } else if (run.outcome === "failed") {
      say(`   a run failed, and is retried: ${run.error}`);
    }
  }
  if (swaps.length >= SWAPS) break;
  const agent = await api("GET", `/v1/agents/${agentId}`);
  if (agent.status === "failed") throw new Error(`the agent failed: ${agent.failureReason}`);
  if (Date.now() > deadline) {
    throw new Error(
      `${swaps.length} of ${SWAPS} swaps within ${WAIT_MS / 1000} s (the agent is ${agent.status}): ` +
        "start the service with SCHEDULE_TIME_SCALE=1200 for an hourly agent to run every 3 seconds",
    );
  }
  await new Promise((resolve) => setTimeout(resolve, 500));
}

// 6. The chain, not the service, says what moved: exactly the amounts in, the swaps' outputs out.
const after = { usdc: await units(walletUsdc), jup: await units(walletJup) };
const got = swaps.reduce((sum, r) => sum + BigInt(r.outAmountUnits as string), 0n);
say(
  `6. after: ${show(after.usdc)} USDC (${show(after.usdc - before.usdc)}), ${show(after.jup)} JUP (+${show(got)})`,
);
if (before.usdc - after.usdc !== BigInt(SWAPS) * AMOUNT_UNITS || after.jup - before.jup !== got) {
  throw new Error("the wallet's balances did not move by exactly the swaps' amounts");
}

// 7. The allowance is spent: pause the agent, so that it waits instead of failing its next slots.
const paused = await api("POST", `/v1/agents/${agentId}:pause`, {});
say(`7. agent ${agentId} is ${paused.status} (resume it after approving more)`);

// 8. Revoke: the wallet itself takes the delegate's authority back (SPL Token `revoke`).
const { value: lifetime } = await rpc.getLatestBlockhash().send();
const revoke = await signTransactionMessageWithSigners(
  pipe(
    createTransactionMessage({ version: 0 }),
    (m) => setTransactionMessageFeePayerSigner(wallet, m),
    (m) => setTransactionMessageLifetimeUsingBlockhash(lifetime, m),
    (m) =>
      appendTransactionMessageInstruction(getRevokeInstruction({ source: walletUsdc, owner: wallet }), m),
  ),
);
const revoked = await rpc
  .sendTransaction(getBase64EncodedWireTransaction(revoke), { encoding: "base64" })
  .send();
await confirmed(revoked);
say(`8. revoked: the wallet's USDC account has no delegate (${revoked})`);
process.stdout.write(`${agentId}\n`);

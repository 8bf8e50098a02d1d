/**
 * A first transfer agent, end to end, as its owner does it: a wallet made and funded on the
 * embedded local chain, an agent created over REST, the approval PrepareApproval answers signed
 * by the wallet and sent, and three runs that move USDC on the chain. Then the agent is paused, so
 * that it does not outlive its allowance (it would fail once the 10 USDC are spent), and the wallet
 * revokes the approval itself (SPL Token `revoke`) before its key, which only this script holds, is gone.
 *
 *   SCHEDULE_TIME_SCALE=1200 npm start          # in one terminal: an hourly agent runs every 3 s
 *   AGENT=$(npx node examples/first-transfer-agent.ts)
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
/** USDC's mainnet mint: the embedded chain holds it at its real address. */
const USDC = "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v" as Address;
const RUNS = 3;
/** How long to wait for the three runs before saying why they may not come. */
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

// 1. A wallet, and someone to pay. Only this script ever holds the wallet's key.
const wallet = await generateKeyPairSigner();
const friend = await generateKeyPairSigner();
say(`1. wallet ${wallet.address}, paying ${friend.address}`);

// 2. Funds on the embedded chain: SOL for the approval's fee, and 100 USDC (in base units: 6 decimals).
await confirmed(await rpc.requestAirdrop(wallet.address, lamports(1_000_000_000n)).send());
await cheatcode("surfnet_setTokenAccount", [wallet.address, USDC, { amount: 100_000_000 }]);
say("2. funded: 1 SOL and 100 USDC");

// 3. The agent: 1.5 USDC every hour (amounts are in whole tokens, up to the token's decimals).
const { agentId } = (await api("POST", "/v1/agents", {
  type: "transfer",
  config: {
    source: wallet.address,
    destination: friend.address,
    amount: 1.5,
    token: "USDC",
    schedule: "hourly",
  },
})) as { agentId: string };
const pending = await api("GET", `/v1/agents/${agentId}`);
say(`3. agent ${agentId} is ${pending.status}: ${pending.pendingReason}`);

// 4. The approval: an unsigned transaction naming the agent's delegate, with a cap of 10 USDC.
//    The wallet checks what it signs (owner, delegate, mint, allowance), signs it and sends it.
const approval = (await api("POST", `/v1/agents/${agentId}:prepareApproval`, { allowance: 10 })) as {
  transaction: string;
  delegate: string;
  allowance: string;
  decimals: number;
};
const unsigned = getTransactionDecoder().decode(getBase64Encoder().encode(approval.transaction));
const signed = await signTransaction([wallet.keyPair], unsigned);
const approvalSignature = await rpc
  .sendTransaction(getBase64EncodedWireTransaction(signed), { encoding: "base64" })
  .send();
await confirmed(approvalSignature);
say(
  `4. approved delegate ${approval.delegate} for ${Number(approval.allowance) / 10 ** approval.decimals} USDC (${approvalSignature})`,
);

// 5. The scheduler sees the approval, activates the agent, and runs it on every slot.
const deadline = Date.now() + WAIT_MS;
const shown = new Set<string>();
for (let succeeded = 0; succeeded < RUNS; ) {
  const { runs } = (await api("GET", `/v1/agents/${agentId}/runs?limit=100`)) as { runs: Json[] };
  for (const run of runs.toReversed()) {
    if (shown.has(String(run.runId)) || succeeded >= RUNS) continue;
    shown.add(String(run.runId));
    const result = run.result as Json;
    if (run.outcome === "succeeded") {
      succeeded += 1;
      say(
        `5. run ${succeeded}: ${result.amount} ${result.token} to ${result.recipient} in ${result.signature}`,
      );
    } else {
      say(`   a run failed, and is retried: ${run.error}`);
    }
  }
  if (succeeded >= RUNS) break;
  const agent = await api("GET", `/v1/agents/${agentId}`);
  if (agent.status === "failed") throw new Error(`the agent failed: ${agent.failureReason}`);
  if (Date.now() > deadline) {
    throw new Error(
      `${succeeded} of ${RUNS} runs within ${WAIT_MS / 1000} s (the agent is ${agent.status}): ` +
        "start the service with SCHEDULE_TIME_SCALE=1200 for an hourly agent to run every 3 seconds",
    );
  }
  await new Promise((resolve) => setTimeout(resolve, 500));
}

// 6. The chain, not the service, says what moved.
const [account] = (
  await rpc.getTokenAccountsByOwner(friend.address, { mint: USDC }, { encoding: "jsonParsed" }).send()
).value;
const received = account === undefined ? "0" : account.account.data.parsed.info.tokenAmount.uiAmountString;
say(`6. ${friend.address} holds ${received} USDC on the chain`);

// 7. Pause the agent: left running, it would spend the rest of its 10 USDC and then fail.
const paused = await api("POST", `/v1/agents/${agentId}:pause`, {});
say(`7. agent ${agentId} is ${paused.status} (ResumeAgent runs it again)`);

// 8. Revoke: the wallet takes the delegate's authority back (SPL Token `revoke`), while this
//    script still holds its key. After this, no agent of this wallet can move its USDC.
const [walletUsdc] = await findAssociatedTokenPda({
  owner: wallet.address,
  mint: USDC,
  tokenProgram: TOKEN_PROGRAM_ADDRESS,
});
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

/**
 * A first trigger order, end to end, as its owner does it: a wallet made and funded on the
 * embedded local chain, a stop-loss (sell 20 JUP for USDC if JUP's price holds below 90 % of
 * today's) created over REST, its approval of exactly 20 JUP signed by the wallet, the price moved
 * below the stop, one fill on chain and the order `completed`; then the approval revoked by the
 * wallet itself and the price put back.
 *
 *   npm start                                    # in one terminal
 *   TRIGGER_AGENT=$(npx node examples/first-trigger-agent.ts)
 *
 * On `npm start` (the embedded chain, JUPITER_API_URL unset) prices come from the chain's local
 * pools, and surfnet_setTokenPrice (as `npm run move-price` does) moves JUP's pool and so its
 * price: a development chain's stand-in for a market that falls. Never against a cluster.
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
/** 20 JUP, sold once, in base units (JUP has 6 decimals). */
const AMOUNT = 20;
const AMOUNT_UNITS = 20_000_000n;
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

/**
 * A JSON-RPC method kit has no typed call for: the local chain's cheatcodes (surfpool's
 * surfnet_setTokenAccount, and our surfnet_setTokenPrice, which moves a token's local pools).
 */
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

/** JUP's USD price as the service has it now. */
async function jupPrice(): Promise<number> {
  const prices = (await api("GET", `/v1/tokens/prices?mints=${JUP}`)) as unknown as { price: number }[];
  const price = prices[0]?.price;
  if (price === undefined || price <= 0) throw new Error("the service has no price for JUP");
  return price;
}

/** Polls `probe` until it gives a value, or fails after WAIT_MS saying what it waited for. */
async function until<T>(probe: () => Promise<T | undefined>, what: string): Promise<T> {
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`not within ${WAIT_MS / 1000} s: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

// 1. A wallet. Only this script ever holds its key.
const wallet = await generateKeyPairSigner();
const walletJup = await ata(wallet.address, JUP);
const walletUsdc = await ata(wallet.address, USDC);
say(`1. wallet ${wallet.address}`);

// 2. Funds on the embedded chain: SOL for the approval's fee, and 100 JUP (in base units).
await confirmed(await rpc.requestAirdrop(wallet.address, lamports(1_000_000_000n)).send());
await cheatcode("surfnet_setTokenAccount", [wallet.address, JUP, { amount: 100_000_000 }]);
const before = { jup: await units(walletJup), usdc: await units(walletUsdc) };
const today = await jupPrice();
say(`2. funded: 1 SOL; before: ${show(before.jup)} JUP, ${show(before.usdc)} USDC; JUP is at ${today} USD`);

// 3. The order: sell 20 JUP for USDC once, if JUP holds below 90 % of today's price, within an hour.
const stop = Number((today * 0.9).toPrecision(6));
const { agentId } = (await api("POST", "/v1/agents", {
  type: "trigger",
  config: {
    wallet: wallet.address,
    inputToken: "JUP",
    outputToken: "USDC",
    amount: AMOUNT,
    triggerCondition: "below",
    triggerPriceUsd: stop,
    expiresAt: new Date(Date.now() + 3_600_000).toISOString(),
  },
})) as { agentId: string };
const pending = await api("GET", `/v1/agents/${agentId}`);
say(`3. stop-loss ${agentId} below ${stop} USD is ${pending.status}: ${pending.pendingReason}`);

// 4. The approval of exactly the order's amount: 20 JUP. The wallet's output (USDC) account is made
//    by the same transaction, the wallet paying.
const approval = (await api("POST", `/v1/agents/${agentId}:prepareApproval`, { allowance: AMOUNT })) as {
  transaction: string;
  delegate: string;
};
const unsigned = getTransactionDecoder().decode(getBase64Encoder().encode(approval.transaction));
const signed = await signTransaction([wallet.keyPair], unsigned);
await confirmed(
  await rpc.sendTransaction(getBase64EncodedWireTransaction(signed), { encoding: "base64" }).send(),
);
await until(
  async () => ((await api("GET", `/v1/agents/${agentId}`)).status === "active" ? true : undefined),
  "the order active once the chain shows its approval",
);
say(`4. approved delegate ${approval.delegate} for ${AMOUNT} JUP; the order watches JUP's price`);

// 5. The market falls: JUP's local pool (and so its price) moved to 80 % of today's.
const fallen = Number((today * 0.8).toPrecision(6));
await cheatcode("surfnet_setTokenPrice", [JUP, fallen]);
say(`5. JUP moved to ${fallen} USD`);

// 6. The order fires once the price held below the stop on consecutive fresh observations.
const done = await until(async () => {
  const agent = await api("GET", `/v1/agents/${agentId}`);
  if (agent.status === "failed") throw new Error(`the order failed: ${agent.failureReason}`);
  return agent.status === "completed" ? agent : undefined;
}, "the order completed");
const firing = (done.trigger as Json).firing as Json;
const { runs } = (await api("GET", `/v1/agents/${agentId}/runs?limit=10`)) as { runs: Json[] };
const fill = runs.find((r) => r.outcome === "succeeded")?.result as Json;
say(
  `6. fired (${firing.leg}) at ${firing.referencePriceUsd} USD on ${(firing.observations as Json[]).length} observations; ` +
    `sold ${fill.inAmount} JUP for ${fill.outAmount} USDC (worst accepted ${fill.worstPriceUsd} USD a JUP) in ${fill.signature}; the order is ${done.status}`,
);

// 7. The chain, not the service, says what moved: exactly 20 JUP out, the fill's USDC in.
const after = { jup: await units(walletJup), usdc: await units(walletUsdc) };
const got = BigInt(fill.outAmountUnits as string);
say(
  `7. after: ${show(after.jup)} JUP (-${show(before.jup - after.jup)}), ${show(after.usdc)} USDC (+${show(got)})`,
);
if (before.jup - after.jup !== AMOUNT_UNITS || after.usdc - before.usdc !== got) {
  throw new Error("the wallet's balances did not move by exactly the fill");
}

// 8. Revoke: the wallet itself takes the delegate's authority back (SPL Token `revoke`).
const { value: lifetime } = await rpc.getLatestBlockhash().send();
const revoke = await signTransactionMessageWithSigners(
  pipe(
    createTransactionMessage({ version: 0 }),
    (m) => setTransactionMessageFeePayerSigner(wallet, m),
    (m) => setTransactionMessageLifetimeUsingBlockhash(lifetime, m),
    (m) => appendTransactionMessageInstruction(getRevokeInstruction({ source: walletJup, owner: wallet }), m),
  ),
);
const revoked = await rpc
  .sendTransaction(getBase64EncodedWireTransaction(revoke), { encoding: "base64" })
  .send();
await confirmed(revoked);
say(`8. revoked: the wallet's JUP account has no delegate (${revoked})`);

// 9. The market back where it was, for whatever runs next on this chain.
await cheatcode("surfnet_setTokenPrice", [JUP, today]);
say(`9. JUP back at ${today} USD`);
process.stdout.write(`${agentId}\n`);

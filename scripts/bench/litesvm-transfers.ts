/**
 * The limit beside the keeper's transfer rate: how many of the same transfers LiteSVM itself runs
 * a second on one core, with nothing of the service or the local chain's bookkeeping around it.
 * The transfers are the keeper's own (src/chain/token-transactions.ts: the fee payer and the
 * wallet's delegate sign; the destination's account is created; a memo names the run), built and
 * signed before the clock starts; the timed loop is LiteSVM's sendTransaction alone. Prints one
 * JSON line: {"transfers", "perSecond", "msEach"}.
 *
 *   node scripts/bench/litesvm-transfers.ts [count]
 */
import { randomBytes } from "node:crypto";
import { getAddressDecoder, getBase64Encoder, getTransactionDecoder } from "@solana/kit";
import { FailedTransactionMetadata } from "litesvm";
import { createDelegateKeys } from "../../src/chain/delegate-keys.ts";
import { generateExecutorKey } from "../../src/chain/executor-key.ts";
import { delegatedTransferTransaction } from "../../src/chain/token-transactions.ts";
import { startLocalChain } from "../../src/local-chain/index.ts";
import { loadCatalog } from "../../src/token/catalog.ts";

const COUNT = Number(process.argv[2] ?? 2000);
const catalog = loadCatalog();
const usdc = catalog.tokens.find((t) => t.symbol === "USDC");
if (usdc === undefined) throw new Error("the catalog has no USDC");
const local = await startLocalChain({ catalog, port: undefined, statePath: undefined, slotMs: 400 });
try {
  const feePayer = generateExecutorKey();
  local.chain.airdrop(feePayer.address, 1_000n * 1_000_000_000n);
  const delegates = createDelegateKeys({ secret: randomBytes(32) });
  const newAddress = () => getAddressDecoder().decode(randomBytes(32));
  const token = { mint: usdc.mint, program: "spl-token" as const, decimals: usdc.decimals };
  const { blockhash, lastValidBlockHeight } = local.chain.latestBlockhash("processed");
  const decoder = getTransactionDecoder();
  const base64 = getBase64Encoder();
  const transactions = [];
  for (let i = 0; i < COUNT; i++) {
    const source = newAddress();
    const answer = (await local.handler.handleValue({
      jsonrpc: "2.0",
      id: i,
      method: "surfnet_setTokenAccount",
      params: [
        source,
        usdc.mint,
        {
          amount: 1_000_000_000,
          delegate: delegates.addressOf("anonymous", source),
          delegatedAmount: 1_000_000_000,
        },
      ],
    })) as { error?: unknown };
    if (answer.error !== undefined) throw new Error(JSON.stringify(answer.error));
    const built = await delegatedTransferTransaction({
      feePayer,
      authority: delegates.keyOf("anonymous", source),
      source,
      destination: newAddress(),
      token,
      amount: 1_000_000n,
      lifetime: { blockhash, lastValidBlockHeight: BigInt(lastValidBlockHeight) },
      memo: `bench run ${i}`,
    });
    transactions.push(decoder.decode(base64.encode(built.transaction)));
  }
  const svm = local.chain.svm;
  const started = performance.now();
  let failed = 0;
  for (const transaction of transactions) {
    const result = svm.sendTransaction(transaction);
    if (result instanceof FailedTransactionMetadata) failed++;
  }
  const ms = performance.now() - started;
  if (failed > 0) throw new Error(`${failed} of ${COUNT} transfers failed in LiteSVM`);
  console.log(JSON.stringify({ transfers: COUNT, perSecond: (COUNT * 1000) / ms, msEach: ms / COUNT }));
} finally {
  await local.close();
}

/**
 * The statuses of the transactions that runs follow, asked for together (src/scheduler/
 * status-watch.ts, through sent-transactions' follow), on the embedded chain over HTTP with kit's
 * transport, every request counted by method: many transactions in flight share each
 * getSignatureStatuses call and each still learns its own outcome, landed or failed; a lone one
 * is asked about once a slot, as before the watch.
 */
import {
  createDefaultRpcTransport,
  generateKeyPairSigner,
  getBase64EncodedWireTransaction,
  getSignatureFromTransaction,
  type KeyPairSigner,
  type RpcTransport,
} from "@solana/kit";
import { getTransferSolInstruction } from "@solana-program/system";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createKitTransferChain } from "../src/chain/kit-transfer-chain.ts";
import { createSharedTransferChain } from "../src/chain/shared-transfer-chain.ts";
import { type RunningLocalChain, startLocalChain } from "../src/local-chain/index.ts";
import { createSentTransactions, type SentOutcome } from "../src/scheduler/sent-transactions.ts";
import { loadCatalog } from "../src/token/catalog.ts";
import { type ChainClient, createChainClient } from "./support/chain-client.ts";

let local: RunningLocalChain;
let chain: ChainClient;
let payer: KeyPairSigner;
/** The JSON-RPC methods the service's side sent, in order. */
const calls: string[] = [];

beforeAll(async () => {
  local = await startLocalChain({ catalog: loadCatalog(), port: 0, statePath: undefined, slotMs: 400 });
  chain = createChainClient(local.url as string);
  payer = await generateKeyPairSigner();
  await chain.airdrop(payer.address, 10n);
});
afterAll(async () => {
  await local?.close();
});

function follower() {
  const http = createDefaultRpcTransport({ url: local.url as string });
  const transport = ((request) => {
    calls.push((request.payload as { method: string }).method);
    return http(request);
  }) as RpcTransport;
  const transfers = createSharedTransferChain(createKitTransferChain({ transport, commitment: "confirmed" }));
  return { transfers, sent: createSentTransactions({ transfers }) };
}

/** Signs a transfer of `lamports` from the payer to a new address; sends it (preflight off) and follows it. */
async function sendAndFollow(
  { transfers, sent }: ReturnType<typeof follower>,
  lamports: bigint,
  signal: AbortSignal,
): Promise<SentOutcome> {
  const receiver = (await generateKeyPairSigner()).address;
  const signed = await chain.sign(payer, [
    getTransferSolInstruction({ source: payer, destination: receiver, amount: lamports }),
  ]);
  const transaction = getBase64EncodedWireTransaction(signed);
  await transfers.sendTransaction(transaction, signal);
  return sent.follow(
    {
      signature: getSignatureFromTransaction(signed),
      transaction,
      lastValidBlockHeight: (signed.lifetimeConstraint as { lastValidBlockHeight: bigint })
        .lastValidBlockHeight,
      generation: 0,
      recordedAt: new Date(),
    },
    signal,
    true,
  );
}

const statusCalls = () => calls.filter((m) => m === "getSignatureStatuses").length;

describe("the status watch", () => {
  it("lets many transactions in flight share each status call, and tells each its own outcome", async () => {
    const watch = follower();
    const signal = new AbortController().signal;
    calls.length = 0;
    const N = 40;
    // One of them fails on chain: more lamports than the payer has (sent without preflight).
    const outcomes = await Promise.all(
      Array.from({ length: N }, (_, i) => sendAndFollow(watch, i === 7 ? 10n ** 15n : 1_000_000n, signal)),
    );
    expect(outcomes.filter((o) => o.kind === "landed")).toHaveLength(N - 1);
    expect(outcomes[7]).toMatchObject({ kind: "failed", err: { InstructionError: [0n, { Custom: 1n }] } });
    // Each run asking on its own makes at least one call each (the code before the watch: 38).
    expect(statusCalls()).toBeGreaterThan(0);
    expect(statusCalls()).toBeLessThan(N / 2);
  });

  it("asks about a lone transaction once a slot", async () => {
    const watch = follower();
    calls.length = 0;
    const started = performance.now();
    const outcome = await sendAndFollow(watch, 1_000_000n, new AbortController().signal);
    const slots = (performance.now() - started) / 400;
    expect(outcome.kind).toBe("landed");
    // It lands in the working slot and is confirmed when the next slot comes: the first status, a
    // slot after the send, finds it, or a later one a slot apart does (one every 100 ms would
    // make about four a slot).
    expect(statusCalls()).toBeGreaterThanOrEqual(1);
    expect(statusCalls()).toBeLessThanOrEqual(Math.floor(slots) + 1);
  });

  it("makes no poll for a follower that gave up", async () => {
    const watch = follower();
    calls.length = 0;
    const stop = new AbortController();
    const following = sendAndFollow(watch, 1_000_000n, stop.signal);
    // Sent (the send is the only call), then given up before its first status is due.
    while (!calls.includes("sendTransaction")) await new Promise((resolve) => setTimeout(resolve, 5));
    await new Promise((resolve) => setTimeout(resolve, 20));
    stop.abort(new Error("given up"));
    await expect(following).rejects.toThrow("given up");
    await new Promise((resolve) => setTimeout(resolve, 800));
    expect(statusCalls()).toBe(0);
  });
});

/**
 * The local chain's own rules, on a chain whose clock the test moves: slots follow time, a
 * blockhash is valid for 150 blocks and then refused, commitments lag as a cluster's do, fees are
 * what the fee payer pays, and a transaction is processed once.
 */

import { generateKeyPairSigner, type KeyPairSigner } from "@solana/kit";
import { getTransferSolInstruction } from "@solana-program/system";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningLocalChain, startLocalChain } from "../src/local-chain/start-local-chain.ts";
import { loadCatalog } from "../src/token/catalog.ts";
import { type ChainClient, createChainClient } from "./support/chain-client.ts";

const SLOT_MS = 400;
let now = Date.UTC(2026, 10, 24, 12, 0, 0);
let local: RunningLocalChain;
let chain: ChainClient;
let payer: KeyPairSigner;

beforeAll(async () => {
  local = await startLocalChain({
    catalog: loadCatalog(),
    port: 0,
    statePath: undefined,
    slotMs: SLOT_MS,
    now: () => now,
  });
  chain = createChainClient(local.url as string);
  payer = await generateKeyPairSigner();
  await chain.airdrop(payer.address, 10n);
});
afterAll(async () => {
  await local?.close();
});

const slot = (commitment: "processed" | "confirmed" | "finalized") =>
  chain.rpc.getSlot({ commitment }).send();

describe("the local chain's clock", () => {
  it("moves one slot per LOCAL_SOLANA_SLOT_MS of wall time, and blockTime is the slot's wall time", async () => {
    const before = await slot("processed");
    now += 10 * SLOT_MS;
    expect(await slot("processed")).toBe(before + 10n);
    const signature = await chain.sendAndConfirm(payer, [
      getTransferSolInstruction({ source: payer, destination: payer.address, amount: 1n }),
    ]);
    const tx = await chain.rpc
      .getTransaction(signature, { encoding: "json", maxSupportedTransactionVersion: 0 })
      .send();
    expect(tx?.slot).toBe(before + 10n);
    expect(tx?.blockTime).toBe(BigInt(Math.floor(now / 1000)));
  });

  it("finalizes 32 slots behind: finalized reads lag, statuses say confirmed until then", async () => {
    const signature = await chain.sendAndConfirm(payer, [
      getTransferSolInstruction({ source: payer, destination: payer.address, amount: 2n }),
    ]);
    expect(await slot("finalized")).toBe((await slot("confirmed")) - 32n);
    let [status] = (await chain.rpc.getSignatureStatuses([signature]).send()).value;
    expect(status).toMatchObject({ confirmationStatus: "confirmed", confirmations: 0n });
    expect(
      await chain.rpc
        .getTransaction(signature, {
          commitment: "finalized",
          encoding: "json",
          maxSupportedTransactionVersion: 0,
        })
        .send(),
    ).toBeNull();
    now += 32 * SLOT_MS;
    [status] = (await chain.rpc.getSignatureStatuses([signature]).send()).value;
    expect(status).toMatchObject({ confirmationStatus: "finalized", confirmations: null });
    expect(
      await chain.rpc
        .getTransaction(signature, {
          commitment: "finalized",
          encoding: "json",
          maxSupportedTransactionVersion: 0,
        })
        .send(),
    ).not.toBeNull();
  });

  it("accepts a blockhash for 150 blocks, then refuses it as not found", async () => {
    const { value: latest } = await chain.rpc.getLatestBlockhash({ commitment: "confirmed" }).send();
    const height = await chain.rpc.getBlockHeight({ commitment: "confirmed" }).send();
    expect(latest.lastValidBlockHeight).toBe(height + 150n);
    now += 150 * SLOT_MS;
    expect(
      (await chain.rpc.isBlockhashValid(latest.blockhash, { commitment: "processed" }).send()).value,
    ).toBe(true);
    now += SLOT_MS;
    expect(
      (await chain.rpc.isBlockhashValid(latest.blockhash, { commitment: "processed" }).send()).value,
    ).toBe(false);
  });

  it("after an idle gap past a blockhash's life (160 slots), the finalized blockhash is still valid and a send with it lands", async () => {
    // The bug: a minute idle (150 slots), and getLatestBlockhash at its default commitment
    // (finalized; kit would send confirmed, so the test names it) named the last hash made before
    // the gap, already expired. Past 182 slots that hash was pruned and the newest, not yet
    // finalized, one was named instead; 160 is inside the window where the expired one was kept.
    now += 160 * SLOT_MS;
    const { value: latest } = await chain.rpc.getLatestBlockhash({ commitment: "finalized" }).send();
    const height = await chain.rpc.getBlockHeight({ commitment: "finalized" }).send();
    expect(latest.lastValidBlockHeight).toBe(height + 150n);
    expect(
      (await chain.rpc.isBlockhashValid(latest.blockhash, { commitment: "processed" }).send()).value,
    ).toBe(true);
    const signature = await chain.send(
      payer,
      [getTransferSolInstruction({ source: payer, destination: payer.address, amount: 3n })],
      { blockhashCommitment: "finalized" },
    );
    expect((await chain.confirm(signature)).err).toBeNull();
  });

  it("charges the fee payer exactly the fee its meta records, also when the transaction fails", async () => {
    const before = (await chain.rpc.getBalance(payer.address).send()).value;
    const failed = await chain.send(
      payer,
      [getTransferSolInstruction({ source: payer, destination: payer.address, amount: 10n ** 15n })],
      {
        skipPreflight: true,
      },
    );
    const status = await chain.confirm(failed);
    // kit reads every integer of an error as a bigint, as it does from any cluster.
    expect(status.err).toEqual({ InstructionError: [0n, { Custom: 1n }] });
    const tx = await chain.rpc
      .getTransaction(failed, { encoding: "json", maxSupportedTransactionVersion: 0 })
      .send();
    expect(tx?.meta?.fee).toBe(5000n);
    expect((await chain.rpc.getBalance(payer.address).send()).value).toBe(before - 5000n);
    expect(tx?.meta?.postBalances[0]).toBe(before - 5000n);
    expect(tx?.meta?.logMessages?.some((line) => line.includes("failed: custom program error: 0x1"))).toBe(
      true,
    );
  });

  it("a transaction its fee payer cannot pay for never lands", async () => {
    const broke = await generateKeyPairSigner();
    const signature = await chain.send(
      broke,
      [getTransferSolInstruction({ source: broke, destination: payer.address, amount: 1n })],
      { skipPreflight: true },
    );
    expect((await chain.rpc.getSignatureStatuses([signature]).send()).value[0]).toBeNull();
    expect(
      await chain.rpc
        .getTransaction(signature, { encoding: "json", maxSupportedTransactionVersion: 0 })
        .send(),
    ).toBeNull();
  });
});

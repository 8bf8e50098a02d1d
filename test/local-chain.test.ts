/**
 * The local chain's own rules, on a chain whose clock the test moves: slots follow time, a
 * blockhash is valid for 150 blocks and then refused, commitments lag as a cluster's do, fees are
 * what the fee payer pays, and a transaction is processed once.
 */

import {
  address,
  generateKeyPairSigner,
  getBase58Encoder,
  getBase64EncodedWireTransaction,
  getSignatureFromTransaction,
  type KeyPairSigner,
  generateKeyPairSigner as newSigner,
} from "@solana/kit";
import { getTransferSolInstruction } from "@solana-program/system";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningLocalChain, startLocalChain } from "../src/local-chain/index.ts";
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
  // A transaction is confirmed once its slot freezes: waiting for it moves the clock a slot.
  chain = createChainClient(local.url as string, {
    whileWaiting: () => {
      now += SLOT_MS;
    },
  });
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
    const sentAt = now;
    const signature = await chain.sendAndConfirm(payer, [
      getTransferSolInstruction({ source: payer, destination: payer.address, amount: 1n }),
    ]);
    const tx = await chain.rpc
      .getTransaction(signature, { encoding: "json", maxSupportedTransactionVersion: 0 })
      .send();
    expect(tx?.slot).toBe(before + 10n);
    expect(tx?.blockTime).toBe(BigInt(Math.floor(sentAt / 1000)));
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

  it("after 20 s idle, each finalized slot has its own blockhash, its block's (rpc.rs get_latest_blockhash, get_block)", async () => {
    now += 50 * SLOT_MS;
    const hashes: string[] = [];
    for (let i = 0; i < 5; i++) {
      const { context, value } = await chain.rpc.getLatestBlockhash({ commitment: "finalized" }).send();
      const block = await chain.rpc
        .getBlock(context.slot, { commitment: "finalized", transactionDetails: "none", rewards: false })
        .send();
      expect(block?.blockhash).toBe(value.blockhash);
      hashes.push(value.blockhash);
      now += SLOT_MS;
    }
    expect(new Set(hashes).size).toBe(5);
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

  it("a send whose preflight fails answers what a simulation answers, and leaves nothing: no fee, no status, the same answer again", async () => {
    const before = (await chain.rpc.getBalance(payer.address).send()).value;
    const receiver = (await generateKeyPairSigner()).address;
    const signed = await chain.sign(payer, [
      getTransferSolInstruction({ source: payer, destination: receiver, amount: 10n ** 15n }),
    ]);
    const base64 = getBase64EncodedWireTransaction(signed);
    const simulated = (
      await chain.raw("simulateTransaction", [base64, { encoding: "base64", sigVerify: true }])
    ).result as { value: Record<string, unknown> };
    const refused = (await chain.raw("sendTransaction", [base64, { encoding: "base64" }])).error as {
      code: number;
      message: string;
      data: Record<string, unknown>;
    };
    expect(refused.code).toBe(-32002);
    expect(refused.message).toBe(
      "Transaction simulation failed: Error processing Instruction 0: custom program error: 0x1",
    );
    // The preflight's data is the simulation's, without its accounts and balances.
    for (const field of ["err", "logs", "unitsConsumed", "fee", "loadedAccountsDataSize", "returnData"]) {
      expect(refused.data[field], field).toEqual(simulated.value[field]);
    }
    expect(refused.data.err).toEqual({ InstructionError: [0, { Custom: 1 }] });
    expect((refused.data.logs as string[]).length).toBeGreaterThan(0);
    // Nothing of the refused run stays: no fee, no status, and the same bytes are refused alike
    // (not "already processed").
    expect((await chain.rpc.getBalance(payer.address).send()).value).toBe(before);
    const signature = getSignatureFromTransaction(signed);
    expect((await chain.rpc.getSignatureStatuses([signature]).send()).value[0]).toBeNull();
    const again = (await chain.raw("sendTransaction", [base64, { encoding: "base64" }])).error;
    expect(again).toEqual(refused);
    now += 2 * SLOT_MS;
    expect((await chain.rpc.getBalance(payer.address).send()).value).toBe(before);
  });

  it("a simulation that replaces the recent blockhash runs a transaction whose own has expired, under the latest", async () => {
    const receiver = (await generateKeyPairSigner()).address;
    const signed = await chain.sign(payer, [
      getTransferSolInstruction({ source: payer, destination: receiver, amount: 1_000_000n }),
    ]);
    const base64 = getBase64EncodedWireTransaction(signed);
    now += 152 * SLOT_MS;
    const simulate = async (replaceRecentBlockhash: boolean) =>
      (
        (
          await chain.raw("simulateTransaction", [
            base64,
            { encoding: "base64", replaceRecentBlockhash, accounts: { addresses: [receiver] } },
          ])
        ).result as {
          value: {
            err: unknown;
            accounts: ({ lamports: number } | null)[] | null;
            replacementBlockhash: { blockhash: string } | null;
          };
        }
      ).value;
    expect((await simulate(false)).err).toBe("BlockhashNotFound");
    const { value: latest } = await chain.rpc.getLatestBlockhash({ commitment: "processed" }).send();
    const replaced = await simulate(true);
    expect(replaced.err).toBeNull();
    expect(replaced.replacementBlockhash?.blockhash).toBe(latest.blockhash);
    expect(replaced.accounts?.[0]?.lamports).toBe(1_000_000);
    // Simulated only: the receiver has nothing.
    expect((await chain.rpc.getBalance(receiver).send()).value).toBe(0n);
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

  it("a transaction whose signature does not verify never lands, with or without preflight, and a good one sent after does", async () => {
    const receiver = (await generateKeyPairSigner()).address;
    const transfer = [
      getTransferSolInstruction({ source: payer, destination: receiver, amount: 1_000_000n }),
    ];
    const wire = new Uint8Array(
      Buffer.from(getBase64EncodedWireTransaction(await chain.sign(payer, transfer)), "base64"),
    );
    // The transfer's amount changed after signing (the low byte of its u64, before the v0 message's
    // last byte, its lookup count): every signature is whole, and none verifies.
    const forged = Uint8Array.from(wire);
    forged[forged.length - 9] = (forged[forged.length - 9] as number) ^ 0x01;
    const before = (await chain.rpc.getBalance(payer.address).send()).value;
    const preflight = await chain.raw("sendTransaction", [
      Buffer.from(forged).toString("base64"),
      { encoding: "base64" },
    ]);
    expect(preflight.error).toMatchObject({ code: -32002, data: { err: "SignatureFailure" } });
    const skipped = await chain.raw("sendTransaction", [
      Buffer.from(forged).toString("base64"),
      { encoding: "base64", skipPreflight: true },
    ]);
    const forgedSignature = skipped.result as string;
    expect(typeof forgedSignature).toBe("string");
    now += 2 * SLOT_MS;
    expect((await chain.rpc.getSignatureStatuses([forgedSignature as never]).send()).value[0]).toBeNull();
    expect((await chain.rpc.getBalance(payer.address).send()).value).toBe(before);
    expect((await chain.rpc.getBalance(receiver).send()).value).toBe(0n);
    // The same transaction as signed lands, with or without preflight: the check refused only the forgery.
    const sent = await chain.raw("sendTransaction", [
      Buffer.from(wire).toString("base64"),
      { encoding: "base64", skipPreflight: true },
    ]);
    expect((await chain.confirm(sent.result as never)).err).toBeNull();
    expect((await chain.rpc.getBalance(receiver).send()).value).toBe(1_000_000n);
  });

  it("refuses a transaction without a fee payer (no signer) as Agave's sanitize does, with or without preflight", async () => {
    const { blockhash } = (await chain.rpc.getLatestBlockhash({ commitment: "confirmed" }).send()).value;
    // No signatures; header 0 signers, 0 read-only signers, 1 read-only key (the System program);
    // one instruction calling it with nothing.
    const message = new Uint8Array([
      0,
      0,
      1,
      1,
      ...new Uint8Array(32),
      ...getBase58Encoder().encode(blockhash),
      1,
      0,
      0,
      0,
    ]);
    const base64 = Buffer.from([0, ...message]).toString("base64");
    const refusal = {
      code: -32602,
      message: "invalid transaction: Transaction failed to sanitize accounts offsets correctly",
    };
    expect((await chain.raw("simulateTransaction", [base64, { encoding: "base64" }])).error).toEqual(refusal);
    for (const skipPreflight of [false, true]) {
      expect(
        (await chain.raw("sendTransaction", [base64, { encoding: "base64", skipPreflight }])).error,
      ).toEqual(refusal);
    }
    expect((await chain.raw("getFeeForMessage", [Buffer.from(message).toString("base64")])).error).toEqual({
      code: -32602,
      message: "invalid transaction message: index out of bounds",
    });
    expect(await chain.raw("getHealth")).toMatchObject({ result: "ok" });
  });
});

describe("blocks on the local chain's clock", () => {
  it("getRecentPrioritizationFees reports a finalized slot's lowest compute-unit price, raised per written account", async () => {
    const other = await newSigner();
    await chain.airdrop(other.address, 1n);
    const price = (microLamports: bigint) => {
      const data = new Uint8Array(9);
      data[0] = 3; // SetComputeUnitPrice
      new DataView(data.buffer).setBigUint64(1, microLamports, true);
      return { programAddress: address("ComputeBudget111111111111111111111111111111"), accounts: [], data };
    };
    now += SLOT_MS;
    // Both land in the working slot, then are confirmed together.
    const cheap = await chain.send(payer, [
      price(5n),
      getTransferSolInstruction({ source: payer, destination: payer.address, amount: 1n }),
    ]);
    const dear = await chain.send(other, [
      price(700n),
      getTransferSolInstruction({ source: other, destination: other.address, amount: 1n }),
    ]);
    await chain.confirm(cheap);
    await chain.confirm(dear);
    const { slot } = (await chain.rpc.getSignatureStatuses([cheap]).send()).value[0] as { slot: bigint };
    now += 40 * SLOT_MS;
    const fees = await chain.rpc.getRecentPrioritizationFees().send();
    expect(fees.find((f) => f.slot === slot)?.prioritizationFee).toBe(5n);
    const forOther = await chain.rpc.getRecentPrioritizationFees([other.address]).send();
    expect(forOther.find((f) => f.slot === slot)?.prioritizationFee).toBe(700n);
    expect(forOther.find((f) => f.slot === slot - 1n)?.prioritizationFee).toBe(0n);
    expect(fees.length).toBe(150);
  });

  it("getBlock refuses a block with a v0 transaction without maxSupportedTransactionVersion (-32015)", async () => {
    const signature = await chain.sendAndConfirm(payer, [
      getTransferSolInstruction({ source: payer, destination: payer.address, amount: 4n }),
    ]);
    const { slot } = (await chain.rpc.getSignatureStatuses([signature]).send()).value[0] as { slot: bigint };
    const refused = await chain.raw("getBlock", [Number(slot), { commitment: "confirmed" }]);
    expect(refused.error).toEqual({
      code: -32015,
      message:
        'Transaction version (0) is not supported by the requesting client. Please try the request again with the following configuration parameter: "maxSupportedTransactionVersion": 0',
    });
    const block = await chain.rpc
      .getBlock(slot, { commitment: "confirmed", maxSupportedTransactionVersion: 0, rewards: false })
      .send();
    expect(block?.transactions.map((t) => t.transaction.signatures[0])).toContain(signature);
    expect(block?.transactions[0]?.version).toBe(0);
    expect(block).not.toHaveProperty("rewards");
    // Not yet finalized: at the default commitment the block is not available.
    expect(
      (await chain.raw("getBlock", [Number(slot), { maxSupportedTransactionVersion: 0 }])).error,
    ).toEqual({
      code: -32004,
      message: `Block not available for slot ${slot}`,
    });
  });

  it("getBlocks refuses a range past 500,000 slots, once capped at the commitment's slot, as Agave does", async () => {
    const first = await chain.rpc.getFirstAvailableBlock().send();
    now += 600_000 * SLOT_MS;
    const finalized = await chain.rpc.getSlot({ commitment: "finalized" }).send();
    expect((await chain.raw("getBlocks", [Number(first), Number(first) + 500_001])).error).toEqual({
      code: -32602,
      message: "Slot range too large; max 500000",
    });
    const last = await chain.rpc
      .getBlocks(finalized - 500_000n, undefined, { commitment: "finalized" })
      .send();
    expect(last.length).toBe(500_001);
    expect(last.at(-1)).toBe(finalized);
    expect(await chain.rpc.getBlocks(finalized + 1n, undefined, { commitment: "finalized" }).send()).toEqual(
      [],
    );
  });
});

describe("simulations' loaded account sizes", () => {
  it("count a called program's data as it is now, after a cheatcode rewrote it", async () => {
    // The chain keeps the sizes of called programs between simulations: a rewrite must show.
    const program = (await newSigner()).address;
    const simulate = async () => {
      const transaction = await chain.sign(payer, [{ programAddress: program, data: new Uint8Array([1]) }]);
      const { result } = (await chain.raw("simulateTransaction", [
        getBase64EncodedWireTransaction(transaction),
        { encoding: "base64", commitment: "confirmed" },
      ])) as { result: { value: { err: unknown; loadedAccountsDataSize: number } } };
      expect(result.value.err).not.toBeNull();
      return result.value.loadedAccountsDataSize;
    };
    const absent = await simulate();
    expect(await simulate()).toBe(absent);
    await chain.raw("surfnet_setAccount", [program, { lamports: 1_000_000_000, data: "ab".repeat(1_000) }]);
    expect(await simulate()).toBe(absent + 1_000 + 64);
    await chain.raw("surfnet_setAccount", [program, { data: "ab".repeat(10) }]);
    expect(await simulate()).toBe(absent + 10 + 64);
  });
});

describe("accounts the chain remembers between reads", () => {
  it("are read anew once a transaction, a cheatcode, a refused preflight or a new slot may have changed them", async () => {
    const receiver = (await newSigner()).address;
    const balance = async (address: string) =>
      (
        (await chain.raw("getBalance", [address, { commitment: "processed" }])) as {
          result: { value: number };
        }
      ).result.value;
    // Read (and remembered) as missing, then written by a transaction in the same slot.
    expect(await balance(receiver)).toBe(0);
    await chain.send(payer, [
      getTransferSolInstruction({ source: payer, destination: receiver, amount: 1_000_000n }),
    ]);
    expect(await balance(receiver)).toBe(1_000_000);
    // Written by a cheatcode, with a rentEpoch a transaction then clears (the runtime's rule).
    await chain.raw("surfnet_setAccount", [receiver, { lamports: 5_000_000, rentEpoch: 5 }]);
    expect(await balance(receiver)).toBe(5_000_000);
    const rentEpoch = async () =>
      (
        (await chain.raw("getAccountInfo", [receiver, { encoding: "base64", commitment: "processed" }])) as {
          result: { value: { rentEpoch: number } };
        }
      ).result.value.rentEpoch;
    expect(await rentEpoch()).toBe(5);
    await chain.send(payer, [
      getTransferSolInstruction({ source: payer, destination: receiver, amount: 1n }),
    ]);
    expect(await rentEpoch()).not.toBe(5);
    expect(await balance(receiver)).toBe(5_000_001);
    // A preflight that fails runs and is undone: the fee it charged is put back, and read so.
    const before = await balance(payer.address);
    const refused = await chain.raw("sendTransaction", [
      getBase64EncodedWireTransaction(
        await chain.sign(payer, [
          getTransferSolInstruction({ source: payer, destination: receiver, amount: 10n ** 15n }),
        ]),
      ),
      { encoding: "base64" },
    ]);
    expect(refused.error).toMatchObject({ code: -32002 });
    expect(await balance(payer.address)).toBe(before);
    // The Clock sysvar moves with the slot.
    const clockSlot = async () => {
      const { result } = (await chain.raw("getAccountInfo", [
        "SysvarC1ock11111111111111111111111111111111",
        { encoding: "base64", commitment: "processed" },
      ])) as { result: { value: { data: [string, string] } } };
      return Buffer.from(result.value.data[0], "base64").readBigUInt64LE(0);
    };
    const first = await clockSlot();
    now += 3 * SLOT_MS;
    expect(await clockSlot()).toBe(first + 3n);
  });
});

/**
 * After 20 s idle on the real clock, the finalized blockhash moves as on Agave: every finalized
 * slot has a blockhash of its own, the one its block shows (rpc.rs get_latest_blockhash answers
 * the finalized bank's last blockhash, get_block its blockhash). web3.js's "wait for a new
 * blockhash" loop stalled every send of its Connection for up to 13 s when it did not. (A slow
 * file: it waits on the wall clock, and so runs beside other files in the main suite.)
 */
import { createSolanaRpc } from "@solana/kit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningLocalChain, startLocalChain } from "../src/local-chain/index.ts";
import { loadCatalog } from "../src/token/catalog.ts";

let local: RunningLocalChain;

beforeAll(async () => {
  local = await startLocalChain({ catalog: loadCatalog(), port: 0, statePath: undefined, slotMs: 400 });
});
afterAll(async () => {
  await local?.close();
});

describe("the finalized blockhash after an idle gap", () => {
  it("is each finalized slot's own, its block's, and changes from slot to slot", async () => {
    const rpc = createSolanaRpc(local.url as string);
    await rpc.getSlot().send();
    await new Promise((resolve) => setTimeout(resolve, 20_000));
    const seen = new Map<bigint, string>();
    const until = Date.now() + 10_000;
    while (seen.size < 6 && Date.now() < until) {
      const { context, value } = await rpc.getLatestBlockhash({ commitment: "finalized" }).send();
      if (!seen.has(context.slot)) seen.set(context.slot, value.blockhash);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(seen.size).toBeGreaterThanOrEqual(6);
    for (const [slot, blockhash] of seen) {
      const block = await rpc
        .getBlock(slot, { commitment: "finalized", transactionDetails: "none", rewards: false })
        .send();
      expect(block?.blockhash, `slot ${slot}`).toBe(blockhash);
    }
    expect(new Set(seen.values()).size).toBe(seen.size);
    // Every slot of the gap is a block of its own, chained to its parent.
    const newest = [...seen.keys()].reduce((a, b) => (a > b ? a : b));
    const gap = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        rpc
          .getBlock(newest - BigInt(i), {
            commitment: "finalized",
            transactionDetails: "none",
            rewards: false,
          })
          .send(),
      ),
    );
    expect(new Set(gap.map((b) => b?.blockhash)).size).toBe(40);
    for (let i = 0; i < gap.length - 1; i++) {
      expect(gap[i]?.previousBlockhash).toBe(gap[i + 1]?.blockhash);
    }
  });
});

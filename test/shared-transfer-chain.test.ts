/**
 * The transfer chain shared by the runs in flight: how many requests reach the chain for many
 * callers, and that each caller still gets its own answers. The chain below is a recorder of the
 * calls it receives (the coordination is what is tested; the kit adapter has its own tests).
 */
import { describe, expect, it } from "vitest";
import type { SentStatus, TransferChain } from "../src/chain/chain.ts";
import { createSharedTransferChain } from "../src/chain/shared-transfer-chain.ts";

function recordingChain() {
  const calls: { method: string; args: unknown }[] = [];
  let height = 100n;
  const chain: TransferChain = {
    getTokenAccount: async () => undefined,
    getTokenAccounts: async (addresses) => addresses.map(() => undefined),
    getLatestBlockhash: async () => {
      calls.push({ method: "getLatestBlockhash", args: undefined });
      return { blockhash: `hash-${calls.length}`, lastValidBlockHeight: 250n };
    },
    getBlockHeight: async () => {
      calls.push({ method: "getBlockHeight", args: undefined });
      return height++;
    },
    getSignatureStatuses: async (signatures) => {
      calls.push({ method: "getSignatureStatuses", args: [...signatures] });
      // A signature "landed-N" landed at slot N; anything else is unknown to the chain.
      return signatures.map((s): SentStatus | undefined =>
        s.startsWith("landed-") ? { slot: BigInt(s.slice(7)), err: null } : undefined,
      );
    },
    getAccounts: async () => [],
    simulateTransaction: async () => ({
      err: null,
      logs: [],
      unitsConsumed: undefined,
      accounts: [],
      raw: [],
    }),
    sendTransaction: async () => {},
  };
  return { chain, calls, count: (method: string) => calls.filter((c) => c.method === method).length };
}

describe("the shared transfer chain", () => {
  it("asks the statuses of one turn's callers in one call, and gives each caller its own answers in its order", async () => {
    const { chain, calls, count } = recordingChain();
    const shared = createSharedTransferChain(chain);
    const asks = Array.from({ length: 50 }, (_, i) =>
      i % 2 === 0 ? [`landed-${i}`, `unknown-${i}`] : [`unknown-${i}`, `landed-${i}`, `landed-${i + 1000}`],
    );
    const answers = await Promise.all(asks.map((signatures) => shared.getSignatureStatuses(signatures)));
    expect(count("getSignatureStatuses")).toBe(1);
    expect((calls[0]?.args as string[] | undefined)?.length).toBe(asks.flat().length);
    for (const [i, signatures] of asks.entries()) {
      expect(answers[i]).toEqual(
        signatures.map((s) =>
          s.startsWith("landed-") ? { slot: BigInt(s.slice(7)), err: null } : undefined,
        ),
      );
    }
  });

  it("never puts more than 256 signatures in one call, and keeps each caller's signatures in one call", async () => {
    const { chain, calls } = recordingChain();
    const shared = createSharedTransferChain(chain);
    const asks = Array.from({ length: 100 }, (_, i) => [`landed-${i}`, `a-${i}`, `b-${i}`]);
    const answers = await Promise.all(asks.map((signatures) => shared.getSignatureStatuses(signatures)));
    const sizes = calls.map((c) => (c.args as string[]).length);
    expect(sizes.every((n) => n <= 256)).toBe(true);
    expect(sizes.reduce((a, b) => a + b, 0)).toBe(300);
    expect(sizes.every((n) => n % 3 === 0)).toBe(true);
    for (const [i, answer] of answers.entries()) expect(answer[0]).toEqual({ slot: BigInt(i), err: null });
  });

  it("serves one blockhash to every run signed within a second, and asks again after it", async () => {
    const { chain, count } = recordingChain();
    const shared = createSharedTransferChain(chain, { blockhashTtlMs: 50 });
    const first = await Promise.all(Array.from({ length: 20 }, () => shared.getLatestBlockhash()));
    expect(count("getLatestBlockhash")).toBe(1);
    expect(new Set(first.map((b) => b.blockhash)).size).toBe(1);
    await new Promise((resolve) => setTimeout(resolve, 80));
    const later = await shared.getLatestBlockhash();
    expect(count("getLatestBlockhash")).toBe(2);
    expect(later.blockhash).not.toBe(first[0]?.blockhash);
  });

  it("keeps no failure, and lets an aborted caller go while the others get the answer", async () => {
    let fail = true;
    const { chain, count } = recordingChain();
    const flaky: TransferChain = {
      ...chain,
      getBlockHeight: async () => {
        if (fail) {
          fail = false;
          throw new Error("the chain cannot be reached");
        }
        return chain.getBlockHeight();
      },
    };
    const shared = createSharedTransferChain(flaky);
    await expect(shared.getBlockHeight()).rejects.toThrow("cannot be reached");
    expect(await shared.getBlockHeight()).toBe(100n);
    const abort = new AbortController();
    abort.abort(new Error("gone"));
    await expect(shared.getSignatureStatuses(["landed-1"], abort.signal)).rejects.toThrow("gone");
    expect(count("getBlockHeight")).toBe(1);
  });
});

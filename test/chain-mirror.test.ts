/**
 * The service's mirror of its chain (chain-mirror.ts): it holds what changed since the genesis,
 * so a worker that dies starts again on it. It must grow with the accounts alive, not with every
 * account that ever was: a swap's taker account lives for one transaction, and a keeper runs
 * thousands of swaps a day.
 */
import { describe, expect, it } from "vitest";
import type { ChainState, SavedAccount } from "../src/local-chain/index.ts";
import { createChainMirror, withDelta } from "../src/local-chain/index.ts";

const clock = { slot: 10, slotMs: 400, genesisMs: 0 } as unknown as ChainState["clock"];
const account = (lamports: number) =>
  ({ lamports, data: "", owner: "11111111111111111111111111111111" }) as unknown as SavedAccount;

describe("the chain mirror", () => {
  it("forgets accounts the chain did not start with once they are gone, and keeps a genesis account's end", () => {
    const mirror = createChainMirror({ keepEntries: 10 });
    for (let run = 0; run < 1_000; run++) {
      mirror.apply({ accounts: [[`taker-${run}`, account(1)]], ledger: [], clock, validFrom: 0 });
      mirror.apply({ accounts: [], forgotten: [`taker-${run}`], ledger: [], clock, validFrom: 0 });
    }
    mirror.apply({
      accounts: [
        ["genesis-account", null],
        ["alive", account(5)],
      ],
      ledger: [],
      clock,
      validFrom: 0,
    });
    const delta = mirror.delta();
    expect(delta?.accounts).toEqual([
      ["genesis-account", null],
      ["alive", account(5)],
    ]);
    const genesis = {
      accounts: [["genesis-account", account(7)]],
      ledger: [],
      clock,
    } as unknown as ChainState;
    expect(withDelta(genesis, delta as NonNullable<typeof delta>).accounts).toEqual([["alive", account(5)]]);
  });
});

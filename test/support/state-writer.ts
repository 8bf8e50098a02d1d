/**
 * A local chain that does nothing but change and save its state, for the test that kills it
 * mid-write (test/local-chain-history.test.ts): airdrops, then a save, over and over, saying
 * on stdout (JSON lines) when each save starts and ends. TEST_STATE_PATH names the state file;
 * TEST_FIRST_AIRDROPS how many airdrops come before the first save (a larger state, longer writes).
 */
import { getAddressDecoder } from "@solana/kit";
import { startLocalChain } from "../../src/local-chain/index.ts";
import { loadCatalog } from "../../src/token/catalog.ts";

const statePath = process.env.TEST_STATE_PATH as string;
const first = Number(process.env.TEST_FIRST_AIRDROPS ?? "0");
const local = await startLocalChain({ catalog: loadCatalog(), port: undefined, statePath, slotMs: 400 });
const addresses = getAddressDecoder();
const airdrops = (count: number) => {
  for (let i = 0; i < count; i++) {
    local.chain.airdrop(addresses.decode(crypto.getRandomValues(new Uint8Array(32))), 1_000_000_000n);
  }
};
const say = (msg: string, fields: Record<string, unknown> = {}) =>
  process.stdout.write(`${JSON.stringify({ msg, entries: local.chain.ledger.size, ...fields })}\n`);
airdrops(first);
say("ready");
for (let n = 1; ; n++) {
  airdrops(100);
  say("saving", { n });
  await local.save();
  say("saved", { n });
}

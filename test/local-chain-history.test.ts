/**
 * What the local chain holds stays bounded however long it runs and however hard its faucet is
 * asked: its history is a window of LOCAL_SOLANA_HISTORY transactions (older ones answered as a
 * validator answers for history it no longer has), never losing a transaction whose blockhash
 * could still land it again; its state file is always a whole one, whether saves pile up or the
 * process is killed in the middle of one; and requestAirdrop is limited per client. Counts, not
 * times: entries and index sizes are compared, never durations.
 */
import { mkdtemp, readdir, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  type Address,
  appendTransactionMessageInstructions,
  createTransactionMessage,
  generateKeyPairSigner,
  getBase64EncodedWireTransaction,
  getSignatureFromTransaction,
  pipe,
  setTransactionMessageFeePayerSigner,
  setTransactionMessageLifetimeUsingBlockhash,
  signTransactionMessageWithSigners,
} from "@solana/kit";
import { getTransferSolInstruction } from "@solana-program/system";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../src/config.ts";
import {
  localKey,
  type RunningLocalChain,
  readChainState,
  startLocalChain,
} from "../src/local-chain/index.ts";
import { loadCatalog } from "../src/token/catalog.ts";
import { type ChainClient, createChainClient } from "./support/chain-client.ts";
import { useCleanups } from "./support/cleanups.ts";
import { spawnMain } from "./support/main-process.ts";

const cleanup = useCleanups();
const catalog = loadCatalog();
const FAUCET = localKey("faucet").address;
const SLOT_MS = 400;
/** A blockhash's life, in slots: what the window never cuts into. */
const BLOCKHASH_SLOTS = 150;
const STATE_WRITER = new URL("./support/state-writer.ts", import.meta.url).pathname;

const randomAddress = async (): Promise<Address> => (await generateKeyPairSigner()).address;

async function tempDir(): Promise<string> {
  const directory = await mkdtemp(join(tmpdir(), "local-chain-history-"));
  cleanup(() => rm(directory, { recursive: true, force: true }));
  return directory;
}

describe("the ledger's window", () => {
  const HISTORY = 50;
  let now = Date.UTC(2026, 10, 24, 12, 0, 0);
  let local: RunningLocalChain;
  let chain: ChainClient;

  beforeAll(async () => {
    local = await startLocalChain({
      catalog,
      port: 0,
      statePath: undefined,
      slotMs: SLOT_MS,
      history: HISTORY,
      now: () => now,
    });
    chain = createChainClient(local.url as string);
  });
  afterAll(async () => {
    await local?.close();
  });

  /** `count` airdrops from the faucet to new wallets, in this slot; their signatures, oldest first. */
  const airdrops = async (count: number): Promise<string[]> => {
    const signatures: string[] = [];
    for (let i = 0; i < count; i++)
      signatures.push(local.chain.airdrop(await randomAddress(), 1_000_000_000n));
    return signatures;
  };
  /** Moves the chain past a blockhash's life, then asks it something (which produces the slot). */
  const afterBlockhashLife = async () => {
    now += (BLOCKHASH_SLOTS + 1) * SLOT_MS;
    await chain.rpc.getSlot().send();
  };

  it("keeps the last LOCAL_SOLANA_HISTORY transactions: the older ones are gone, with their index entries", async () => {
    // The genesis's day of history (2,605 transactions) was cut to the window at start.
    expect(local.chain.ledger.size).toBe(HISTORY);
    const first = await airdrops(120);
    await afterBlockhashLife();
    const stats = local.chain.ledger.stats();
    expect(stats.entries).toBe(HISTORY);
    expect(stats.signatures).toBe(HISTORY);
    // Each airdrop names three accounts: the faucet, its wallet and the System program.
    expect(stats.indexed).toBe(HISTORY * 3);
    expect(stats.addresses).toBe(HISTORY + 2);

    // As a validator answers for history it no longer has.
    const gone = first[0] as string;
    const kept = first.at(-1) as string;
    const transaction = (signature: string) =>
      chain.raw("getTransaction", [signature, { encoding: "json", commitment: "confirmed" }]);
    expect(await transaction(gone)).toMatchObject({ result: null });
    expect(await transaction(kept)).toMatchObject({ result: { slot: expect.any(Number) } });
    expect(
      await chain.raw("getSignatureStatuses", [[gone, kept], { searchTransactionHistory: true }]),
    ).toMatchObject({ result: { value: [null, { confirmationStatus: "finalized" }] } });
    const history = (config: Record<string, unknown>) =>
      chain.raw("getSignaturesForAddress", [FAUCET, { commitment: "confirmed", ...config }]);
    const listed = (await history({})).result as { signature: string; slot: number }[];
    expect(listed.map((e) => e.signature)).toEqual(first.slice(-HISTORY).reverse());
    expect(await history({ before: gone })).toMatchObject({ result: [] });
    expect(await chain.raw("minimumLedgerSlot")).toEqual({
      jsonrpc: "2.0",
      result: local.chain.ledger.firstSlot,
      id: expect.any(Number),
    });

    // As many again: nothing more is held (the count per transaction is bounded).
    await airdrops(120);
    await afterBlockhashLife();
    expect(local.chain.ledger.stats()).toEqual(stats);
  });

  it("never drops a transaction whose blockhash is still valid: sent again, it is not run twice", async () => {
    await afterBlockhashLife();
    const payer = await generateKeyPairSigner();
    const to = await randomAddress();
    local.chain.airdrop(payer.address, 2_000_000_000n);
    const { value: blockhash } = await chain.rpc.getLatestBlockhash({ commitment: "confirmed" }).send();
    const transfer = await pipe(
      createTransactionMessage({ version: 0 }),
      (m) => setTransactionMessageFeePayerSigner(payer, m),
      (m) => setTransactionMessageLifetimeUsingBlockhash(blockhash, m),
      (m) =>
        appendTransactionMessageInstructions(
          [getTransferSolInstruction({ source: payer, destination: to, amount: 1_000_000_000n })],
          m,
        ),
      (m) => signTransactionMessageWithSigners(m),
    );
    const wire = getBase64EncodedWireTransaction(transfer);
    await chain.rpc.sendTransaction(wire, { encoding: "base64" }).send();
    // Three windows' worth of transactions, all within its blockhash's life.
    await airdrops(3 * HISTORY);
    expect(local.chain.ledger.size).toBeGreaterThan(3 * HISTORY);
    expect(local.chain.ledger.get(getSignatureFromTransaction(transfer))).toBeDefined();
    await chain.rpc.sendTransaction(wire, { encoding: "base64", skipPreflight: true }).send();
    expect((await chain.rpc.getBalance(to).send()).value).toBe(1_000_000_000n);
    // Once its blockhash is past, the window applies again.
    await afterBlockhashLife();
    expect(local.chain.ledger.size).toBe(HISTORY);
  });

  it("reads LOCAL_SOLANA_HISTORY, refusing values that name no window", () => {
    expect(loadConfig({}).solana.local.history).toBe(100_000);
    expect(loadConfig({ LOCAL_SOLANA_HISTORY: "5000" }).solana.local.history).toBe(5000);
    for (const value of ["0", "10", "lots"]) {
      expect(() => loadConfig({ LOCAL_SOLANA_HISTORY: value })).toThrow(ConfigError);
      expect(() => loadConfig({ LOCAL_SOLANA_HISTORY: value })).toThrow(
        /LOCAL_SOLANA_HISTORY must be an integer from 1000 to 10000000/,
      );
    }
  });
});

describe("the state file", () => {
  it("is always a whole one while saves pile up: one write at a time, each readable", async () => {
    const directory = await tempDir();
    const statePath = join(directory, "chain.bin");
    const outcomes: boolean[] = [];
    const local = await startLocalChain({
      catalog,
      port: undefined,
      statePath,
      slotMs: SLOT_MS,
      onSaved: (outcome) => outcomes.push(outcome.ok),
    });
    cleanup(() => local.close());
    const written = outcomes.length;
    let reads = 0;
    let reading = true;
    // A reader that looks at the file as often as it can while saves are asked for: it never
    // finds a part of one.
    const reader = (async () => {
      while (reading) {
        const state = await readChainState(statePath);
        expect(state?.ledger.length ?? 0).toBeGreaterThan(2000);
        reads++;
      }
    })();
    const wallets = await Promise.all(Array.from({ length: 50 }, randomAddress));
    // 50 changes, each followed by a save asked for, none waited for: one write runs, and the
    // saves asked meanwhile are one more write after it (the changes ride on it), not 50 writes
    // each holding its own snapshot of the chain.
    const saves: Promise<void>[] = [];
    for (const wallet of wallets) {
      local.chain.airdrop(wallet, 1_000_000_000n);
      saves.push(local.save());
    }
    await Promise.all(saves);
    reading = false;
    await reader;
    const writes = outcomes.length - written;
    expect(writes).toBeGreaterThanOrEqual(1);
    expect(writes).toBeLessThanOrEqual(2);
    expect(outcomes.every(Boolean)).toBe(true);
    expect(reads).toBeGreaterThan(0);
    const saved = await readChainState(statePath);
    expect(saved?.ledger.length).toBe(local.chain.ledger.size);
    expect((await readdir(directory)).filter((name) => name.endsWith(".tmp"))).toEqual([]);
  });

  it("keeps a rentEpoch surfnet_setAccount set across a restart, and forgets it once a transaction writes the account", async () => {
    const directory = await tempDir();
    const statePath = join(directory, "chain.bin");
    const first = await startLocalChain({ catalog, port: undefined, statePath, slotMs: SLOT_MS });
    const kept = await randomAddress();
    const written = await randomAddress();
    for (const address of [kept, written]) {
      first.chain.setAccount(address, {
        lamports: 1_000_000n,
        data: new Uint8Array(),
        programAddress: "11111111111111111111111111111111" as never,
        executable: false,
        rentEpoch: 5n,
      });
    }
    first.chain.airdrop(written, 1n);
    await first.close();
    const second = await startLocalChain({ catalog, port: undefined, statePath, slotMs: SLOT_MS });
    cleanup(() => second.close());
    expect(second.chain.account(kept)?.rentEpoch).toBe(5n);
    expect(second.chain.account(written)?.rentEpoch).toBeUndefined();
  });

  it("is never cut short or empty when the process is killed in the middle of a save", async () => {
    const directory = await tempDir();
    const statePath = join(directory, "chain.bin");
    let interrupted = 0;
    let entries = 0;
    for (let round = 0; round < 5; round++) {
      const writer = spawnMain(
        { TEST_STATE_PATH: statePath, TEST_FIRST_AIRDROPS: round === 0 ? "3000" : "0" },
        STATE_WRITER,
      );
      cleanup(async () => writer.kill());
      // The temporary files a killed write left are gone once the chain has started again.
      await writer.waitForLog((line) => line.msg === "ready", 60_000);
      expect((await readdir(directory)).filter((name) => name.endsWith(".tmp"))).toEqual([]);
      // Killed right as a save starts (the 2nd or 3rd of this run, at random), a few ms into it.
      const n = 2 + (round % 2);
      await writer.waitForLog((line) => line.msg === "saving" && line.n === n, 60_000);
      await new Promise((resolve) => setTimeout(resolve, round * 5));
      writer.kill();
      await writer.exited;
      if ((await readdir(directory)).some((name) => name.endsWith(".tmp"))) interrupted++;
      // Whatever moment the kill came at, the file is a whole state: the last one saved, or the one before.
      expect((await stat(statePath)).size).toBeGreaterThan(0);
      const state = await readChainState(statePath);
      expect(state?.ledger.length).toBeGreaterThanOrEqual(entries);
      entries = state?.ledger.length ?? 0;
    }
    // The kills did land in the middle of writes (else this test would prove nothing).
    expect(interrupted).toBeGreaterThan(0);
    expect(entries).toBeGreaterThan(2605 + 3000);
  }, 180_000);
});

describe("requestAirdrop", () => {
  it("is limited per client: past the burst it answers -32600 saying so, and other clients are not held up", async () => {
    const local = await startLocalChain({
      catalog,
      port: 0,
      statePath: undefined,
      slotMs: SLOT_MS,
      airdropLimit: { rate: 1, burst: 3 },
    });
    cleanup(() => local.close());
    const chain = createChainClient(local.url as string);
    const wallet = await randomAddress();
    const ask = () => chain.raw("requestAirdrop", [wallet, 1_000_000_000]);
    for (let i = 0; i < 3; i++) expect(await ask()).toHaveProperty("result");
    const refused = await ask();
    expect(refused).toMatchObject({
      error: {
        code: -32600,
        message: expect.stringMatching(
          /^airdrop request failed: rate limit reached for this client \(1 airdrops a second, bursts of 3; LOCAL_SOLANA_AIRDROPS_PER_SECOND, LOCAL_SOLANA_AIRDROP_BURST\): try again in 1 s$/,
        ),
      },
    });
    expect((await chain.rpc.getBalance(wallet).send()).value).toBe(3_000_000_000n);
    // The service in this process is another client.
    const inProcess = await local.handler.handleValue({
      jsonrpc: "2.0",
      id: 1,
      method: "requestAirdrop",
      params: [wallet, 1_000_000_000],
    });
    expect(inProcess).toHaveProperty("result");
  });

  it("reads its limits from LOCAL_SOLANA_AIRDROPS_PER_SECOND and LOCAL_SOLANA_AIRDROP_BURST", () => {
    expect(loadConfig({}).solana.local.airdropLimit).toEqual({ rate: 2, burst: 20 });
    expect(
      loadConfig({ LOCAL_SOLANA_AIRDROPS_PER_SECOND: "5", LOCAL_SOLANA_AIRDROP_BURST: "50" }).solana.local
        .airdropLimit,
    ).toEqual({ rate: 5, burst: 50 });
    expect(() => loadConfig({ LOCAL_SOLANA_AIRDROP_BURST: "0" })).toThrow(
      /LOCAL_SOLANA_AIRDROP_BURST must be an integer/,
    );
  });
});

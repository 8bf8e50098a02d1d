/**
 * The local chain's pools and its mints' powers are held by keys of each chain's own, from a random
 * seed kept in its state file, never by keys anyone can derive from a public name (issue 53, N1).
 * A local client on the machine (kit, no API key, cheatcodes off) that signs with the keys the
 * chain once derived from names (sha256 of "pool SOL/USDC", "token authority") can take nothing
 * from a pool, mint nothing and freeze nothing; the catalog's mints have no freeze authority; two
 * fresh chains have different keys; and a chain's keys survive its state file, its pools working
 * after a reload.
 */
import { createHash, randomBytes } from "node:crypto";
import { mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  type Address,
  createKeyPairSignerFromPrivateKeyBytes,
  generateKeyPairSigner,
  getAddressDecoder,
  type KeyPairSigner,
  some,
} from "@solana/kit";
import {
  findAssociatedTokenPda,
  getCreateAssociatedTokenIdempotentInstruction,
  getFreezeAccountInstruction,
  getMintDecoder,
  getMintEncoder,
  getMintToCheckedInstruction,
  getTransferCheckedInstruction,
  TOKEN_PROGRAM_ADDRESS,
} from "@solana-program/token";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createEmbeddedSwapRoutes,
  defaultCacheDir,
  type LocalPool,
  localPools,
  type RunningLocalChain,
  readChainState,
  startLocalChain,
  writeChainState,
} from "../src/local-chain/index.ts";
import { loadCatalog } from "../src/token/catalog.ts";
import { type ChainClient, createChainClient } from "./support/chain-client.ts";
import { useCleanups } from "./support/cleanups.ts";

const cleanup = useCleanups();
const catalog = loadCatalog();
const USDC = catalog.tokens.find((t) => t.symbol === "USDC")?.mint as Address;
const JUP = catalog.tokens.find((t) => t.symbol === "JUP")?.mint as Address;
const NATIVE_MINT = "So11111111111111111111111111111111111111112";
const SLOT_MS = 400;

/** What anyone could sign as before: the key the chain derived from a public name. */
const publicNameKey = (name: string): Promise<KeyPairSigner> =>
  createKeyPairSignerFromPrivateKeyBytes(
    new Uint8Array(createHash("sha256").update(`token-agent-service local chain: ${name}`).digest()),
  );

const poolNamed = (pools: readonly LocalPool[], name: string) =>
  pools.find((p) => p.name === name) as LocalPool;

const ata = async (owner: Address, mint: Address) =>
  (await findAssociatedTokenPda({ owner, mint, tokenProgram: TOKEN_PROGRAM_ADDRESS }))[0];

/** A chain on a port of its own; closed after the test, unless `keep` (then the caller closes it). */
async function start(
  options: { statePath?: string; cheatcodes?: boolean; keep?: boolean } = {},
): Promise<RunningLocalChain> {
  const local = await startLocalChain({
    catalog,
    port: 0,
    statePath: options.statePath,
    slotMs: SLOT_MS,
    cheatcodes: options.cheatcodes ?? false,
  });
  if (options.keep !== true) cleanup(() => local.close());
  return local;
}

/** The mint as the chain's RPC shows it (jsonParsed). */
async function parsedMint(chain: ChainClient, mint: string): Promise<Record<string, unknown>> {
  const answer = await chain.raw("getAccountInfo", [mint, { encoding: "jsonParsed" }]);
  const value = (answer.result as { value: { data: { parsed: { info: Record<string, unknown> } } } }).value;
  return value.data.parsed.info;
}

describe("a local client signing with the keys once derived from public names", () => {
  let local: RunningLocalChain;
  let chain: ChainClient;
  let attacker: KeyPairSigner;
  let pool: LocalPool;

  beforeAll(async () => {
    // Cheatcodes off: the attack needs none, only the chain's port.
    local = await start({ cheatcodes: false, keep: true });
    chain = createChainClient(local.url as string);
    attacker = await generateKeyPairSigner();
    await chain.airdrop(attacker.address, 10n);
    pool = poolNamed(await localPools(catalog, local.keys), "SOL/USDC");
  });
  afterAll(async () => {
    await local?.close();
  });

  it("cannot take a pool's USDC or SOL", async () => {
    const oldPoolKey = await publicNameKey("pool SOL/USDC");
    for (const [mint, vault, decimals] of [
      [USDC, pool.vaultB, pool.decimalsB],
      [NATIVE_MINT as Address, pool.vaultA, pool.decimalsA],
    ] as const) {
      const before = await chain.rpc.getTokenAccountBalance(vault as Address).send();
      const mine = await ata(attacker.address, mint);
      const taking = chain.sendAndConfirm(attacker, [
        getCreateAssociatedTokenIdempotentInstruction({
          payer: attacker,
          ata: mine,
          owner: attacker.address,
          mint,
        }),
        getTransferCheckedInstruction({
          source: vault as Address,
          mint,
          destination: mine,
          authority: oldPoolKey,
          amount: BigInt(before.value.amount) / 40n,
          decimals,
        }),
      ]);
      await expect(taking, `the pool's ${mint} vault`).rejects.toThrow();
      const after = await chain.rpc.getTokenAccountBalance(vault as Address).send();
      expect(after.value.amount).toBe(before.value.amount);
    }
  });

  it("cannot mint a catalog token, nor freeze a holder's account or a pool's vault", async () => {
    const oldAuthority = await publicNameKey("token authority");
    const mine = await ata(attacker.address, USDC);
    const minting = chain.sendAndConfirm(attacker, [
      getCreateAssociatedTokenIdempotentInstruction({
        payer: attacker,
        ata: mine,
        owner: attacker.address,
        mint: USDC,
      }),
      getMintToCheckedInstruction({
        mint: USDC,
        token: mine,
        mintAuthority: oldAuthority,
        amount: 1_000_000n * 1_000_000n,
        decimals: 6,
      }),
    ]);
    await expect(minting).rejects.toThrow();
    const victim = await ata((await publicNameKey("wallet 1")).address, USDC);
    for (const account of [victim, pool.vaultB as Address]) {
      const freezing = chain.sendAndConfirm(attacker, [
        getFreezeAccountInstruction({ account, mint: USDC, owner: oldAuthority }),
      ]);
      await expect(freezing, `freezing ${account}`).rejects.toThrow();
      const parsed = await chain.raw("getAccountInfo", [account, { encoding: "jsonParsed" }]);
      expect(JSON.stringify(parsed)).toContain('"state":"initialized"');
    }
  });

  it("finds every catalog mint with no freeze authority, and its mint authority the chain's own key", async () => {
    const oldAuthority = (await publicNameKey("token authority")).address;
    for (const token of catalog.tokens) {
      const info = await parsedMint(chain, token.mint);
      expect(info.freezeAuthority ?? null, token.symbol).toBeNull();
      if (token.mint === NATIVE_MINT) continue;
      expect(info.mintAuthority, token.symbol).toBe(local.keys.authority.address);
      expect(info.mintAuthority, token.symbol).not.toBe(oldAuthority);
    }
  });
});

describe("the chain's keys", () => {
  it("differ between two fresh chains, and the genesis they start from holds none", async () => {
    const [a, b] = [await start(), await start()];
    expect(a.keys.seed).not.toBe(b.keys.seed);
    expect(a.keys.authority.address).not.toBe(b.keys.authority.address);
    const [poolA, poolB] = [
      poolNamed(await localPools(catalog, a.keys), "SOL/USDC"),
      poolNamed(await localPools(catalog, b.keys), "SOL/USDC"),
    ];
    expect(poolA.key.address).not.toBe(poolB.key.address);
    expect(poolA.key.address).not.toBe((await publicNameKey("pool SOL/USDC")).address);
    // Each chain holds its own pools, funded, and not the other's.
    const chainA = createChainClient(a.url as string);
    expect((await chainA.rpc.getTokenAccountBalance(poolA.vaultB as Address).send()).value.amount).not.toBe(
      "0",
    );
    expect(await chainA.raw("getAccountInfo", [poolB.vaultB, { encoding: "base64" }])).toMatchObject({
      result: { value: null },
    });
    // The genesis is public (cached on disk, built into an image): it holds no seed.
    const cache = defaultCacheDir();
    const files = (await readdir(cache)).filter((name) => /^local-chain-genesis-.*\.bin$/.test(name));
    expect(files.length).toBeGreaterThan(0);
    for (const name of files) expect((await readChainState(join(cache, name)))?.keySeed).toBeUndefined();
  });

  it("survive a save and a load of the state file: the same keys, and the pools still authorize swaps", async () => {
    const directory = await mkdtemp(join(tmpdir(), "local-chain-keys-"));
    cleanup(() => rm(directory, { recursive: true, force: true }));
    const statePath = join(directory, "chain.bin");
    const first = await startLocalChain({ catalog, port: undefined, statePath, slotMs: SLOT_MS });
    const seed = first.keys.seed;
    await first.close();
    expect((await readChainState(statePath))?.keySeed).toBe(seed);

    const again = await start({ statePath, cheatcodes: true });
    expect(again.keys.seed).toBe(seed);
    const chain = createChainClient(again.url as string);
    expect((await parsedMint(chain, USDC)).mintAuthority).toBe(again.keys.authority.address);
    const routes = createEmbeddedSwapRoutes({
      transport: again.transport,
      pools: await localPools(catalog, again.keys),
    });
    const taker = getAddressDecoder().decode(randomBytes(32));
    const answer = await routes.build(
      new URLSearchParams({
        inputMint: USDC,
        outputMint: JUP,
        amount: "1000000",
        taker,
        payer: taker,
        destinationTokenAccount: getAddressDecoder().decode(randomBytes(32)),
        slippageBps: "50",
      }),
    );
    // 200 only once the pool's key approved the taker on the chain: it still owns its vaults.
    expect(answer.status).toBe(200);
    const jupPool = poolNamed(await localPools(catalog, again.keys), "JUP/USDC");
    const vault = await chain.raw("getAccountInfo", [jupPool.vaultA, { encoding: "jsonParsed" }]);
    expect(JSON.stringify(vault)).toContain(`"delegate":"${taker}"`);
  });

  it("are made for a state file saved before chains had them: its mints' powers move off the public key", async () => {
    const directory = await mkdtemp(join(tmpdir(), "local-chain-keys-"));
    cleanup(() => rm(directory, { recursive: true, force: true }));
    const statePath = join(directory, "chain.bin");
    const first = await startLocalChain({ catalog, port: undefined, statePath, slotMs: SLOT_MS });
    await first.close();
    // As an older version saved it: no seed, and USDC minted and frozen by the public authority.
    const saved = (await readChainState(statePath)) as NonNullable<
      Awaited<ReturnType<typeof readChainState>>
    >;
    const oldAuthority = (await publicNameKey("token authority")).address;
    const accounts = saved.accounts.map(([at, account]) => {
      if (at !== USDC) return [at, account] as const;
      const mint = getMintDecoder().decode(Buffer.from(account.data, "base64"));
      const data = getMintEncoder().encode({
        ...mint,
        mintAuthority: some(oldAuthority),
        freezeAuthority: some(oldAuthority),
      });
      return [at, { ...account, data: Buffer.from(data).toString("base64") }] as const;
    });
    await writeChainState(statePath, { accounts, clock: saved.clock, ledger: saved.ledger });

    const again = await start({ statePath });
    expect(again.keys.seed).not.toBe(saved.keySeed);
    const chain = createChainClient(again.url as string);
    const usdc = await parsedMint(chain, USDC);
    expect(usdc.mintAuthority).toBe(again.keys.authority.address);
    expect(usdc.freezeAuthority ?? null).toBeNull();
    const pool = poolNamed(await localPools(catalog, again.keys), "SOL/USDC");
    expect((await chain.rpc.getTokenAccountBalance(pool.vaultB as Address).send()).value.amount).not.toBe(
      "0",
    );
    await again.save();
    expect((await readChainState(statePath))?.keySeed).toBe(again.keys.seed);
  });
});

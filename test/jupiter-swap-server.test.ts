/**
 * The Jupiter-shaped test server (support/jupiter-swap-server.ts) against the embedded local
 * chain, asked through the service's own Swap API adapter: an honest answer's instructions, and
 * nothing else, make a transaction that lands and moves exactly the quoted tokens; the next quote
 * reads the moved reserves; each hostile mode answers what its name says.
 */
import { randomBytes } from "node:crypto";
import {
  AccountRole,
  type Address,
  appendTransactionMessageInstructions,
  type Blockhash,
  compileTransaction,
  compressTransactionMessageUsingAddressLookupTables,
  createTransactionMessage,
  generateKeyPairSigner,
  getAddressDecoder,
  getBase64EncodedWireTransaction,
  getTransactionEncoder,
  type Instruction,
  type KeyPairSigner,
  pipe,
  setTransactionMessageFeePayer,
  setTransactionMessageFeePayerSigner,
  setTransactionMessageLifetimeUsingBlockhash,
  signTransactionMessageWithSigners,
} from "@solana/kit";
import { findAssociatedTokenPda, getTokenDecoder, TOKEN_PROGRAM_ADDRESS } from "@solana-program/token";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningLocalChain, startLocalChain } from "../src/local-chain/index.ts";
import { loadCatalog } from "../src/token/catalog.ts";
import {
  createJupiterSwapApi,
  NoRouteError,
  type SwapApi,
  SwapApiUnavailableError,
  type SwapBuild,
  type SwapInstruction,
} from "../src/token/jupiter-swap-api.ts";
import { type ChainClient, createChainClient } from "./support/chain-client.ts";
import {
  JUPITER_SLIPPAGE_ERROR,
  type JupiterSwapServer,
  SERVER_COMPUTE_UNIT_PRICE,
  SLIPPAGE_PROGRAM,
  startJupiterSwapServer,
} from "./support/jupiter-swap-server.ts";

const RESERVE_A = 1_000_000_000_000n; // 1,000,000 A (6 decimals)
const RESERVE_B = 50_000_000_000_000n; // 50,000 B (9 decimals)
const AMOUNT = 2_000_000_000n; // 2,000 A
const FEE_BPS = 30n;
const COMPUTE_BUDGET = "ComputeBudget111111111111111111111111111111" as Address;
/** SPL Token's instruction tags. */
const TRANSFER_CHECKED = 12;
const APPROVE = 4;
const SET_AUTHORITY = 6;

let local: RunningLocalChain;
let chain: ChainClient;
let server: JupiterSwapServer;
let api: SwapApi;
let payer: KeyPairSigner;
let mintA: Address;
let mintB: Address;
let mintC: Address;

const randomAddress = (): Address => getAddressDecoder().decode(randomBytes(32));
const ata = async (owner: Address, mint: Address): Promise<Address> =>
  (await findAssociatedTokenPda({ owner, mint, tokenProgram: TOKEN_PROGRAM_ADDRESS }))[0];
const tokenAccount = async (account: string) => {
  const { value } = await chain.rpc.getAccountInfo(account as Address, { encoding: "base64" }).send();
  if (value === null) throw new Error(`${account} does not exist`);
  return getTokenDecoder().decode(Buffer.from(value.data[0], "base64"));
};
const balance = async (account: string): Promise<bigint> => {
  const { value } = await chain.rpc.getTokenAccountBalance(account as Address).send();
  return BigInt(value.amount);
};

/** A swapping party: the taker (the delegate) and the owner whose output account receives. */
async function party(fund: bigint) {
  const taker = await generateKeyPairSigner();
  const owner = randomAddress();
  await chain.setTokenBalance(owner, mintB, 0n);
  await chain.setTokenBalance(owner, mintA, 0n);
  if (fund > 0n) await chain.setTokenBalance(taker.address, mintA, fund);
  return { taker, owner, destination: await ata(owner, mintB) };
}

const request = (
  p: { taker: KeyPairSigner; destination: Address },
  extra: { maxAccounts?: number } = {},
) => ({
  inputMint: mintA,
  outputMint: mintB,
  amount: AMOUNT,
  taker: p.taker.address,
  payer: payer.address,
  destinationTokenAccount: p.destination,
  slippageBps: 50,
  ...extra,
});

/** The quote a constant-product pool with these reserves gives for AMOUNT. */
const expectedOut = (reserveIn: bigint, reserveOut: bigint): bigint => {
  const net = AMOUNT - (AMOUNT * FEE_BPS) / 10_000n;
  return (reserveOut * net) / (reserveIn + net);
};

/** The answer's instructions as kit instructions, the taker's signer attached where it signs. */
function kitInstructions(build: SwapBuild, taker: KeyPairSigner): Instruction[] {
  const all: SwapInstruction[] = [
    ...build.setupInstructions,
    build.swapInstruction,
    ...(build.cleanupInstruction === undefined ? [] : [build.cleanupInstruction]),
    ...build.otherInstructions,
  ];
  const price = new Uint8Array(9);
  price[0] = 3;
  new DataView(price.buffer).setBigUint64(1, build.computeUnitPrice ?? 0n, true);
  return [
    { programAddress: COMPUTE_BUDGET, accounts: [], data: price },
    ...all.map((ix) => ({
      programAddress: ix.programAddress as Address,
      data: ix.data,
      accounts: ix.accounts.map((m) => {
        const role = m.signer
          ? m.writable
            ? AccountRole.WRITABLE_SIGNER
            : AccountRole.READONLY_SIGNER
          : m.writable
            ? AccountRole.WRITABLE
            : AccountRole.READONLY;
        if (m.signer && m.address !== taker.address) throw new Error(`the answer asks ${m.address} to sign`);
        return m.signer
          ? { address: m.address as Address, role, signer: taker }
          : { address: m.address as Address, role };
      }),
    })),
  ];
}

const allOf = (build: SwapBuild): SwapInstruction[] => [
  ...build.setupInstructions,
  build.swapInstruction,
  ...(build.cleanupInstruction === undefined ? [] : [build.cleanupInstruction]),
  ...build.otherInstructions,
];

beforeAll(async () => {
  local = await startLocalChain({ catalog: loadCatalog(), port: 0, statePath: undefined, slotMs: 400 });
  chain = createChainClient(local.url as string);
  payer = await generateKeyPairSigner();
  await chain.airdrop(payer.address, 10n);
  mintA = await chain.createMint(6);
  mintB = await chain.createMint(9);
  mintC = await chain.createMint(6);
  server = await startJupiterSwapServer({
    rpcUrl: local.url as string,
    pools: [{ mintA, mintB, reserveA: RESERVE_A, reserveB: RESERVE_B }],
    feeBps: Number(FEE_BPS),
  });
  api = createJupiterSwapApi({ baseUrl: server.url, timeoutMs: 10_000, maxBytes: 256 * 1024 });
});
afterAll(async () => {
  await server?.close();
  await local?.close();
});

describe("an honest answer", () => {
  it("swaps for real: the taker pays, the destination gets exactly outAmount, the reserves move", async () => {
    server.setMode("honest");
    const p = await party(AMOUNT);
    const [pool] = server.pools;
    if (pool === undefined) throw new Error("no pool");
    const before = { a: await balance(pool.vaultA), b: await balance(pool.vaultB) };
    const build = await api.build(request(p));
    expect(build.inAmount).toBe(AMOUNT);
    expect(build.outAmount).toBe(expectedOut(before.a, before.b));
    expect(build.minimumOut).toBe((build.outAmount * 9_950n) / 10_000n);
    expect(build.computeUnitPrice).toBe(SERVER_COMPUTE_UNIT_PRICE);
    expect(build.routeLabels).toEqual(["Local CPMM"]);
    // Only SPL Token, and no signer but the taker.
    for (const ix of allOf(build)) {
      expect(ix.programAddress).toBe(TOKEN_PROGRAM_ADDRESS);
      for (const m of ix.accounts) if (m.signer) expect(m.address).toBe(p.taker.address);
    }

    await chain.sendAndConfirm(
      // The payer pays (it is the fee payer); the taker signs what names it.
      payer,
      kitInstructions(build, p.taker),
    );
    expect(await balance(p.destination)).toBe(build.outAmount);
    expect(await balance(await ata(p.taker.address, mintA))).toBe(0n);
    expect(await balance(pool.vaultA)).toBe(before.a + AMOUNT);
    expect(await balance(pool.vaultB)).toBe(before.b - build.outAmount);

    // The next quote is priced from the moved reserves: less B for the same A.
    const again = await api.build(request(await party(0n)));
    expect(again.outAmount).toBe(expectedOut(before.a + AMOUNT, before.b - build.outAmount));
    expect(again.outAmount).toBeLessThan(build.outAmount);
  });

  it("swaps the other way through the same pool", async () => {
    server.setMode("honest");
    const taker = await generateKeyPairSigner();
    const owner = randomAddress();
    await chain.setTokenBalance(owner, mintA, 0n);
    await chain.setTokenBalance(taker.address, mintB, 1_000_000_000n);
    const build = await api.build({
      inputMint: mintB,
      outputMint: mintA,
      amount: 1_000_000_000n,
      taker: taker.address,
      payer: payer.address,
      destinationTokenAccount: await ata(owner, mintA),
      slippageBps: 100,
    });
    await chain.sendAndConfirm(payer, kitInstructions(build, taker));
    expect(await balance(await ata(owner, mintA))).toBe(build.outAmount);
  });

  it("sends what it was asked, as Jupiter's parameters", async () => {
    const p = await party(0n);
    const count = server.requests().length;
    await api.build(request(p, { maxAccounts: 30 }));
    const asked = server.requests()[count];
    expect(asked?.get("taker")).toBe(p.taker.address);
    expect(asked?.get("payer")).toBe(payer.address);
    expect(asked?.get("destinationTokenAccount")).toBe(p.destination);
    expect(asked?.get("maxAccounts")).toBe("30");
    expect(asked?.get("wrapAndUnwrapSol")).toBe("false");
  });

  it("has no route for a pair without a pool", async () => {
    server.setMode("honest");
    const p = await party(0n);
    await expect(api.build({ ...request(p), outputMint: mintC })).rejects.toBeInstanceOf(NoRouteError);
  });
});

describe("each hostile mode answers what its name says, and what it does when sent", () => {
  const hostile = async (mode: Parameters<JupiterSwapServer["setMode"]>[0], extra = {}) => {
    server.setMode(mode);
    const p = await party(AMOUNT);
    try {
      return { p, build: await api.build(request(p, extra)) };
    } finally {
      server.setMode("honest");
    }
  };

  it("extra-transfer-out-of-owner: a transfer from the owner's input account to a stranger", async () => {
    const { p, build } = await hostile("extra-transfer-out-of-owner");
    const ownerInput = await ata(p.owner, mintA);
    const extra = allOf(build).filter(
      (ix) => ix.data[0] === TRANSFER_CHECKED && ix.accounts[0]?.address === ownerInput,
    );
    expect(extra).toHaveLength(1);
    expect(extra[0]?.accounts[2]?.address).toBe(await ata(server.stranger as Address, mintA));
    expect(extra[0]?.accounts[3]).toEqual({ address: p.taker.address, signer: true, writable: false });

    // A real threat: with the allowance an owner gives the delegate, the transaction would pay it.
    const grant = await chain.raw("surfnet_setTokenAccount", [
      p.owner,
      mintA,
      { amount: Number(AMOUNT), delegate: p.taker.address, delegatedAmount: Number(AMOUNT) },
    ]);
    expect(grant.error).toBeUndefined();
    const strangerInput = await ata(server.stranger as Address, mintA);
    const strangerBefore = await balance(strangerInput);
    await chain.sendAndConfirm(payer, kitInstructions(build, p.taker));
    expect(await balance(strangerInput)).toBe(strangerBefore + AMOUNT);
    expect(await balance(ownerInput)).toBe(0n);
  });

  it("approve-spliced: an Approve of a stranger over the taker's input account", async () => {
    const { p, build } = await hostile("approve-spliced");
    const approve = allOf(build).filter((ix) => ix.data[0] === APPROVE);
    expect(approve).toHaveLength(1);
    expect(approve[0]?.accounts.map((m) => m.address)).toEqual([
      await ata(p.taker.address, mintA),
      server.stranger,
      p.taker.address,
    ]);
    // Sent, the stranger could spend the taker's account later.
    await chain.sendAndConfirm(payer, kitInstructions(build, p.taker));
    const account = await tokenAccount(await ata(p.taker.address, mintA));
    expect(account.delegate).toEqual({ __option: "Some", value: server.stranger });
  });

  it("set-authority-spliced: the taker's input account handed to a stranger", async () => {
    const { p, build } = await hostile("set-authority-spliced");
    const setAuthority = allOf(build).filter((ix) => ix.data[0] === SET_AUTHORITY);
    expect(setAuthority).toHaveLength(1);
    expect(setAuthority[0]?.accounts[0]?.address).toBe(await ata(p.taker.address, mintA));
    // AuthorityType AccountOwner (2), then Some(stranger).
    expect([...(setAuthority[0]?.data.slice(1, 3) ?? [])]).toEqual([2, 1]);
    expect(getAddressDecoder().decode(setAuthority[0]?.data.slice(3, 35) ?? new Uint8Array(32))).toBe(
      server.stranger,
    );
    // Before the swap, it would make the taker's own payment fail; sent alone, it is what it says.
    const [price, ...instructions] = kitInstructions(build, p.taker);
    const alone = instructions.filter((ix) => ix.data?.[0] === SET_AUTHORITY);
    await chain.sendAndConfirm(payer, [...(price === undefined ? [] : [price]), ...alone]);
    expect((await tokenAccount(await ata(p.taker.address, mintA))).owner).toBe(server.stranger);
  });

  it("foreign-destination: the payout goes to a stranger's account", async () => {
    const { p, build } = await hostile("foreign-destination");
    const payouts = allOf(build).filter(
      (ix) => ix.data[0] === TRANSFER_CHECKED && ix.accounts[1]?.address === mintB,
    );
    expect(payouts).toHaveLength(1);
    expect(payouts[0]?.accounts[2]?.address).toBe(await ata(server.stranger as Address, mintB));
    expect(payouts[0]?.accounts[2]?.address).not.toBe(p.destination);
    const strangerOutput = await ata(server.stranger as Address, mintB);
    const strangerBefore = await balance(strangerOutput);
    await chain.sendAndConfirm(payer, kitInstructions(build, p.taker));
    expect(await balance(strangerOutput)).toBe(strangerBefore + build.outAmount);
    expect(await balance(p.destination)).toBe(0n);
  });

  it("unknown-program: an instruction of a program on no allow-list", async () => {
    const { build } = await hostile("unknown-program");
    const foreign = allOf(build).filter((ix) => ix.programAddress !== TOKEN_PROGRAM_ADDRESS);
    expect(foreign).toHaveLength(1);
    expect(foreign[0]?.accounts.some((m) => m.signer)).toBe(true);
  });

  it("low-minimum-out: a minimum out of a hundredth of the quote", async () => {
    const { build } = await hostile("low-minimum-out");
    expect(build.slippageBps).toBe(50);
    expect(build.minimumOut).toBe(build.outAmount / 100n);
  });

  it("huge-answer: more than 4 MB, refused by a bounded client", async () => {
    const { p } = await hostile("honest");
    server.setMode("huge-answer");
    try {
      const error = await api.build(request(p)).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(SwapApiUnavailableError);
      expect((error as SwapApiUnavailableError).reason).toBe("too_large");
      const response = await fetch(`${server.url}/build?${server.requests().at(-1)}`);
      const text = await response.text();
      expect(text.length).toBeGreaterThan(4 * 1024 * 1024);
      expect(JSON.parse(text).swapInstruction.programId).toBe(TOKEN_PROGRAM_ADDRESS);
    } finally {
      server.setMode("honest");
    }
  });

  it("never-answers: the request is read and nothing comes back", async () => {
    server.setMode("never-answers");
    try {
      const p = await party(0n);
      const impatient = createJupiterSwapApi({ baseUrl: server.url, timeoutMs: 500, maxBytes: 1024 });
      const count = server.requests().length;
      const error = await impatient.build(request(p)).catch((e: unknown) => e);
      expect((error as SwapApiUnavailableError).reason).toBe("timeout");
      expect(server.requests()).toHaveLength(count + 1);
    } finally {
      server.setMode("honest");
    }
  });

  it("no-route: Jupiter's no-route answer for a pair that has a pool", async () => {
    server.setMode("no-route");
    try {
      await expect(api.build(request(await party(0n)))).rejects.toBeInstanceOf(NoRouteError);
    } finally {
      server.setMode("honest");
    }
  });

  it("slippage-6001: a program in the swap slot failing on chain with Jupiter's custom error 6001", async () => {
    const { p, build } = await hostile("slippage-6001");
    expect(build.swapInstruction.programAddress).toBe(SLIPPAGE_PROGRAM);
    expect(build.swapInstruction.accounts.filter((m) => m.signer)).toEqual([
      { address: p.taker.address, signer: true, writable: false },
    ]);
    const destinationBefore = await balance(p.destination);
    const signature = await chain.send(payer, kitInstructions(build, p.taker), { skipPreflight: true });
    const status = await chain.confirm(signature);
    // Instruction 0 is the test's own unit price; the swap is next.
    expect(JSON.stringify(status.err, (_k, v) => (typeof v === "bigint" ? Number(v) : v))).toBe(
      JSON.stringify({ InstructionError: [1, { Custom: JUPITER_SLIPPAGE_ERROR }] }),
    );
    expect(await balance(p.destination)).toBe(destinationBefore);
    expect(await balance(await ata(p.taker.address, mintA))).toBe(AMOUNT);
  });

  it("oversize-transaction: past 1232 bytes unless maxAccounts is low", async () => {
    const { p, build } = await hostile("oversize-transaction");
    const size = await wireSize(kitInstructions(build, p.taker));
    expect(size).toBeGreaterThan(1232);
    const lowered = await hostile("oversize-transaction", { maxAccounts: 20 });
    expect(lowered.build.cleanupInstruction?.accounts).toHaveLength(4);
    expect(await wireSize(kitInstructions(lowered.build, lowered.p.taker))).toBeLessThanOrEqual(1232);
  });
});

describe("a lookup table", () => {
  it("is named in the answer, is real on the chain, and a v0 transaction through it swaps", async () => {
    const withTable = await startJupiterSwapServer({
      rpcUrl: local.url as string,
      pools: [{ mintA, mintB, reserveA: RESERVE_A, reserveB: RESERVE_B }],
      feeBps: Number(FEE_BPS),
      lookupTable: true,
    });
    try {
      const table = withTable.lookupTable;
      const [pool] = withTable.pools;
      if (table === undefined || pool === undefined) throw new Error("no lookup table or pool");
      const tableApi = createJupiterSwapApi({
        baseUrl: withTable.url,
        timeoutMs: 10_000,
        maxBytes: 256 * 1024,
      });
      const p = await party(AMOUNT);
      const build = await tableApi.build(request(p));
      expect({ ...build.lookupTables }).toEqual({ [table.address]: table.addresses });
      expect(table.addresses).toEqual(expect.arrayContaining([pool.vaultA, pool.vaultB]));

      const { value: blockhash } = await chain.rpc.getLatestBlockhash({ commitment: "confirmed" }).send();
      const message = compressTransactionMessageUsingAddressLookupTables(
        pipe(
          createTransactionMessage({ version: 0 }),
          (m) => setTransactionMessageFeePayerSigner(payer, m),
          (m) => setTransactionMessageLifetimeUsingBlockhash(blockhash, m),
          (m) => appendTransactionMessageInstructions(kitInstructions(build, p.taker), m),
        ),
        { [table.address as Address]: table.addresses as Address[] },
      );
      const signed = await signTransactionMessageWithSigners(message);
      const signature = await chain.rpc
        .sendTransaction(getBase64EncodedWireTransaction(signed), {
          encoding: "base64",
          preflightCommitment: "confirmed",
        })
        .send();
      expect((await chain.confirm(signature)).err).toBeNull();
      expect(await balance(p.destination)).toBe(build.outAmount);
      const landed = await chain.rpc
        .getTransaction(signature, {
          encoding: "json",
          maxSupportedTransactionVersion: 0,
          commitment: "confirmed",
        })
        .send();
      // The vaults came through the table, not the message's own keys.
      if (landed === null) throw new Error("the swap is not in the history");
      const lookups = (landed.transaction.message as { addressTableLookups?: { accountKey: string }[] })
        .addressTableLookups;
      expect(lookups?.map((lookup) => lookup.accountKey)).toEqual([table.address]);
      expect(landed?.meta?.loadedAddresses?.writable).toEqual(
        expect.arrayContaining([pool.vaultA, pool.vaultB]),
      );
      expect(landed?.transaction.message.accountKeys).not.toContain(pool.vaultA);
    } finally {
      await withTable.close();
    }
  });
});

/** The size of the transaction these instructions make, signatures included. */
async function wireSize(instructions: Instruction[]): Promise<number> {
  const message = pipe(
    createTransactionMessage({ version: 0 }),
    (m) => setTransactionMessageFeePayer(payer.address, m),
    (m) =>
      setTransactionMessageLifetimeUsingBlockhash(
        { blockhash: "11111111111111111111111111111111" as Blockhash, lastValidBlockHeight: 0n },
        m,
      ),
    (m) => appendTransactionMessageInstructions(instructions, m),
  );
  return getTransactionEncoder().encode(compileTransaction(message)).length;
}

/**
 * TokenService on the embedded local chain, as a wallet would drive it: the test makes real
 * transactions with @solana/kit against the chain's JSON-RPC port (a wallet funded with the
 * surfpool cheatcode sends USDC, swaps, burns, fails; a Token-2022 mint with its metadata extension
 * is created and minted from), then reads them back through GetTokenTransactions and
 * GetTokenMetadata over every protocol and REST. Expected values are what the test sent and what
 * the chain's own JSON-RPC says (blockTime), never the service's code.
 */

import { Code } from "@connectrpc/connect";
import { getMetadataAccountDataSerializer } from "@metaplex-foundation/mpl-token-metadata/dist/src/generated/accounts/metadata.js";
import {
  type Address,
  address,
  generateKeyPairSigner,
  getAddressEncoder,
  getProgramDerivedAddress,
  type KeyPairSigner,
  type Signature,
  some,
} from "@solana/kit";
import { getCreateAccountInstruction } from "@solana-program/system";
import {
  findAssociatedTokenPda,
  getBurnCheckedInstruction,
  getInitializeMint2Instruction as getClassicInitializeMint2Instruction,
  getMintSize as getClassicMintSize,
  getCreateAssociatedTokenIdempotentInstruction,
  getTransferCheckedInstruction,
  TOKEN_PROGRAM_ADDRESS,
} from "@solana-program/token";
import {
  extension,
  getInitializeMint2Instruction,
  getMintSize,
  getMintToCheckedInstruction,
  getPostInitializeInstructionsForMintExtensions,
  getPreInitializeInstructionsForMintExtensions,
  TOKEN_2022_PROGRAM_ADDRESS,
} from "@solana-program/token-2022";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TokenService } from "../gen/token/v1/token_pb.ts";
import { loadCatalog } from "../src/token/catalog.ts";
import { createProtocols, type Outcome, type Protocol } from "./support/callers.ts";
import { type ChainClient, createChainClient } from "./support/chain-client.ts";
import { type RunningServer, startServer } from "./support/start-server.ts";

const catalog = loadCatalog();
const token = (symbol: string) =>
  catalog.tokens.find((t) => t.symbol === symbol) as (typeof catalog.tokens)[number];
const USDC = address(token("USDC").mint);
const BONK = address(token("BONK").mint);
const METAPLEX = address("metaqbxxUerdq28cj1RbAWkYQm3ybzjb6a8bt518x1s");

let server: RunningServer;
let chain: ChainClient;
let protocols: Protocol[];
let alice: KeyPairSigner;
let bob: KeyPairSigner;

type Expected = { signature: Signature; amount: number; sender: string; recipient: string; type: string };
/** USDC transactions the test made, oldest first. */
const usdcMade: Expected[] = [];
/** The swap, as BONK's history must show it. */
let bonkSwap: Expected;
/** The Token-2022 mint the test created, and its mint transaction. */
let token2022: KeyPairSigner;
let minted: Expected;
/** A classic mint whose Metaplex metadata the test wrote, and one without any metadata. */
let described: KeyPairSigner;
let bare: KeyPairSigner;

const ata = async (owner: Address, mint: Address, tokenProgram: Address = TOKEN_PROGRAM_ADDRESS) =>
  (await findAssociatedTokenPda({ owner, mint, tokenProgram }))[0];

beforeAll(async () => {
  server = await startServer();
  protocols = createProtocols(server.baseUrl);
  chain = createChainClient(server.localChain?.url as string);
  [alice, bob] = await Promise.all([generateKeyPairSigner(), generateKeyPairSigner()]);
  await chain.airdrop(alice.address, 5n);
  await chain.airdrop(bob.address, 1n);
  await chain.setTokenBalance(alice.address, USDC, 1_000_000_000n); // 1,000 USDC
  await chain.setTokenBalance(bob.address, BONK, 50_000_000n); // 500 BONK

  const aliceUsdc = await ata(alice.address, USDC);
  const bobUsdc = await ata(bob.address, USDC);
  const transfer = (
    units: bigint,
    from: KeyPairSigner,
    source: Address,
    destination: Address,
    mint = USDC,
    decimals = 6,
  ) => getTransferCheckedInstruction({ source, mint, destination, authority: from, amount: units, decimals });

  // Three transfers: the first creates Bob's account; the amounts test exact decimals.
  for (const [units, amount] of [
    [1_100_000n, 1.1],
    [1n, 0.000001],
    [123_456_789n, 123.456789],
  ] as const) {
    const signature = await chain.sendAndConfirm(alice, [
      getCreateAssociatedTokenIdempotentInstruction({
        payer: alice,
        ata: bobUsdc,
        owner: bob.address,
        mint: USDC,
      }),
      transfer(units, alice, aliceUsdc, bobUsdc),
    ]);
    usdcMade.push({ signature, amount, sender: alice.address, recipient: bob.address, type: "transfer" });
  }

  // A swap: Alice pays 2 USDC, Bob pays 1.5 BONK, in one transaction both sign.
  const aliceBonk = await ata(alice.address, BONK);
  const swap = await chain.sendAndConfirm(alice, [
    getCreateAssociatedTokenIdempotentInstruction({
      payer: alice,
      ata: aliceBonk,
      owner: alice.address,
      mint: BONK,
    }),
    transfer(2_000_000n, alice, aliceUsdc, bobUsdc),
    transfer(150_000n, bob, await ata(bob.address, BONK), aliceBonk, BONK, 5),
  ]);
  usdcMade.push({ signature: swap, amount: 2, sender: alice.address, recipient: bob.address, type: "swap" });
  bonkSwap = { signature: swap, amount: 1.5, sender: bob.address, recipient: alice.address, type: "swap" };

  // A burn of half a USDC.
  const burn = await chain.sendAndConfirm(alice, [
    getBurnCheckedInstruction({
      account: aliceUsdc,
      mint: USDC,
      authority: alice,
      amount: 500_000n,
      decimals: 6,
    }),
  ]);
  usdcMade.push({ signature: burn, amount: 0.5, sender: alice.address, recipient: "", type: "burn" });

  // A transfer of more than Alice holds, sent without preflight: it lands, fails, and pays its fee.
  const failed = await chain.send(alice, [transfer(10n ** 15n, alice, aliceUsdc, bobUsdc)], {
    skipPreflight: true,
  });
  expect((await chain.confirm(failed)).err).not.toBeNull();
  usdcMade.push({ signature: failed, amount: 0, sender: alice.address, recipient: "", type: "failed" });

  // A Token-2022 mint carrying its name and symbol in its metadata extension, then a mint to Bob.
  token2022 = await generateKeyPairSigner();
  const extensions = [
    extension("MetadataPointer", {
      authority: some(alice.address),
      metadataAddress: some(token2022.address),
    }),
    extension("TokenMetadata", {
      updateAuthority: some(alice.address),
      mint: token2022.address,
      name: "Test Dollar",
      symbol: "TUSD",
      uri: "https://example.com/tusd.json",
      additionalMetadata: new Map(),
    }),
  ];
  const rent = async (size: number) => chain.rpc.getMinimumBalanceForRentExemption(BigInt(size)).send();
  await chain.sendAndConfirm(alice, [
    getCreateAccountInstruction({
      payer: alice,
      newAccount: token2022,
      lamports: await rent(getMintSize(extensions)),
      space: getMintSize([extensions[0] as (typeof extensions)[number]]),
      programAddress: TOKEN_2022_PROGRAM_ADDRESS,
    }),
    ...getPreInitializeInstructionsForMintExtensions(token2022.address, extensions),
    getInitializeMint2Instruction({ mint: token2022.address, decimals: 2, mintAuthority: alice.address }),
    ...getPostInitializeInstructionsForMintExtensions(token2022.address, alice, extensions),
  ]);
  const bob2022 = await ata(bob.address, token2022.address, TOKEN_2022_PROGRAM_ADDRESS);
  const mintTo = await chain.sendAndConfirm(alice, [
    getCreateAssociatedTokenIdempotentInstruction({
      payer: alice,
      ata: bob2022,
      owner: bob.address,
      mint: token2022.address,
      tokenProgram: TOKEN_2022_PROGRAM_ADDRESS,
    }),
    getMintToCheckedInstruction({
      mint: token2022.address,
      token: bob2022,
      mintAuthority: alice,
      amount: 550n,
      decimals: 2,
    }),
  ]);
  minted = { signature: mintTo, amount: 5.5, sender: "", recipient: bob.address, type: "mint" };

  // Two classic mints: one whose Metaplex metadata account the test writes, one with none.
  [described, bare] = await Promise.all([generateKeyPairSigner(), generateKeyPairSigner()]);
  for (const mint of [described, bare]) {
    await chain.sendAndConfirm(alice, [
      getCreateAccountInstruction({
        payer: alice,
        newAccount: mint,
        lamports: await rent(getClassicMintSize()),
        space: getClassicMintSize(),
        programAddress: TOKEN_PROGRAM_ADDRESS,
      }),
      getClassicInitializeMint2Instruction({ mint: mint.address, decimals: 3, mintAuthority: alice.address }),
    ]);
  }
  const encoder = getAddressEncoder();
  const [pda] = await getProgramDerivedAddress({
    programAddress: METAPLEX,
    seeds: ["metadata", encoder.encode(METAPLEX), encoder.encode(described.address)],
  });
  const data = getMetadataAccountDataSerializer().serialize({
    updateAuthority: alice.address,
    mint: described.address,
    // As older Metaplex accounts hold them: padded with NUL bytes to a fixed length.
    name: "Described Token".padEnd(32, "\0"),
    symbol: "DESC".padEnd(10, "\0"),
    uri: "",
    sellerFeeBasisPoints: 0,
    creators: { __option: "None" },
    primarySaleHappened: false,
    isMutable: true,
    editionNonce: { __option: "None" },
    tokenStandard: { __option: "Some", value: 2 },
    collection: { __option: "None" },
    uses: { __option: "None" },
    collectionDetails: { __option: "None" },
    programmableConfig: { __option: "None" },
  } as unknown as Parameters<ReturnType<typeof getMetadataAccountDataSerializer>["serialize"]>[0]);
  const written = await chain.raw("surfnet_setAccount", [
    pda,
    { lamports: 5_616_720, owner: METAPLEX, data: Buffer.from(data).toString("hex"), executable: false },
  ]);
  expect(written).not.toHaveProperty("error");
}, 60_000);

afterAll(async () => {
  for (const p of protocols ?? []) p.close();
  await server?.close();
});

/** What GetTokenTransactions must answer for `made` (newest first), with blockTime from the chain. */
async function expectedPage(made: readonly Expected[]) {
  return Promise.all(
    [...made].reverse().map(async (e) => {
      const tx = await chain.rpc
        .getTransaction(e.signature, { encoding: "json", maxSupportedTransactionVersion: 0 })
        .send();
      return { ...e, blockTime: Number(tx?.blockTime) };
    }),
  );
}

function data(outcome: Outcome): unknown {
  if (!outcome.ok) throw new Error(`${outcome.code}: ${outcome.message}`);
  return outcome.json.data;
}

describe.each(createProtocols("http://127.0.0.1:1").map((p) => p.name))("over %s", (name) => {
  const call = (method: string, request: Record<string, unknown>) =>
    (protocols.find((p) => p.name === name) as Protocol).call(TokenService, method, request);

  it("lists the transactions the test made, newest first, exact in amount, sender, recipient, type and blockTime", async () => {
    const page = data(await call("GetTokenTransactions", { mint: USDC, limit: usdcMade.length }));
    expect(page).toEqual(await expectedPage(usdcMade));
  });

  it("shows the swap from the other token's side", async () => {
    const [first] = data(await call("GetTokenTransactions", { mint: BONK, limit: 1 })) as unknown[];
    expect(first).toEqual((await expectedPage([bonkSwap]))[0]);
  });

  it("a Token-2022 mint: its history starts with the mint, its metadata comes from its extension", async () => {
    const [first] = data(
      await call("GetTokenTransactions", { mint: token2022.address, limit: 1 }),
    ) as unknown[];
    expect(first).toEqual((await expectedPage([minted]))[0]);
    expect(data(await call("GetTokenMetadata", { mint: token2022.address }))).toEqual({
      mint: token2022.address,
      symbol: "TUSD",
      name: "Test Dollar",
      decimals: 2,
      logoURI: "",
      tags: [],
    });
  });

  it("a classic mint's name and symbol come from its Metaplex account; a mint without metadata has none", async () => {
    expect(data(await call("GetTokenMetadata", { mint: described.address }))).toMatchObject({
      name: "Described Token",
      symbol: "DESC",
      decimals: 3,
    });
    expect(data(await call("GetTokenMetadata", { mint: bare.address }))).toMatchObject({
      name: "",
      symbol: "",
      decimals: 3,
    });
  });

  it("an address that is not a mint is not_found: a wallet, a token account, an empty address", async () => {
    for (const mint of [
      alice.address,
      await ata(alice.address, USDC),
      (await generateKeyPairSigner()).address,
    ]) {
      for (const method of ["GetTokenMetadata", "GetTokenTransactions"]) {
        const outcome = await call(method, { mint });
        expect(outcome.ok, `${method} ${mint}`).toBe(false);
        if (!outcome.ok) expect(outcome.code).toBe(Code.NotFound);
      }
    }
  });
});

describe("over REST", () => {
  it("GET /v1/tokens/{mint}/transactions lists the same transactions", async () => {
    const response = await fetch(`${server.baseUrl}/v1/tokens/${USDC}/transactions?limit=${usdcMade.length}`);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ success: true, data: await expectedPage(usdcMade) });
  });

  it("GET /v1/tokens/{mint}/metadata reads the Token-2022 extension", async () => {
    const response = await fetch(`${server.baseUrl}/v1/tokens/${token2022.address}/metadata`);
    expect(((await response.json()) as { data: { name: string } }).data.name).toBe("Test Dollar");
  });
});

/**
 * The Swap API client's own cost, and the Jupiter-shaped test server's: prints figures, asserts
 * nothing.
 *
 *   node scripts/bench/swap-api.ts
 *
 * 1. createJupiterSwapApi against a loopback server answering one fixed, realistic /build answer
 *    (the test server's own, about 1.8 KB): builds a second, one at a time and four at a time (the
 *    client's default concurrency), so the figure is the client's fetch, bounded read and checks.
 * 2. The test server on the embedded local chain (test/support/jupiter-swap-server.ts): a quote
 *    (vault reads and the delegate cheatcode), and a whole honest swap (quote, then a v0
 *    transaction from the answer, sent and confirmed).
 *
 * BENCH_SWAP_BUILDS (default 3000) and BENCH_SWAP_SWAPS (default 100) change the counts.
 */
import { randomBytes } from "node:crypto";
import * as http from "node:http";
import type { AddressInfo } from "node:net";
import {
  AccountRole,
  type Address,
  generateKeyPairSigner,
  getAddressDecoder,
  type Instruction,
  type KeyPairSigner,
} from "@solana/kit";
import { findAssociatedTokenPda, TOKEN_PROGRAM_ADDRESS } from "@solana-program/token";
import { startLocalChain } from "../../src/local-chain/index.ts";
import { loadCatalog } from "../../src/token/catalog.ts";
import { createJupiterSwapApi, type SwapBuild } from "../../src/token/jupiter-swap-api.ts";
import { createChainClient } from "../../test/support/chain-client.ts";
import { startJupiterSwapServer } from "../../test/support/jupiter-swap-server.ts";

const BUILDS = Number(process.env.BENCH_SWAP_BUILDS ?? 3000);
const SWAPS = Number(process.env.BENCH_SWAP_SWAPS ?? 100);
const AMOUNT = 1_000_000n;

const local = await startLocalChain({ catalog: loadCatalog(), port: 0, statePath: undefined, slotMs: 400 });
const rpcUrl = local.url as string;
const chain = createChainClient(rpcUrl);
const randomAddress = (): Address => getAddressDecoder().decode(randomBytes(32));
const mintA = await chain.createMint(6);
const mintB = await chain.createMint(9);
const server = await startJupiterSwapServer({
  rpcUrl,
  pools: [{ mintA, mintB, reserveA: 10n ** 13n, reserveB: 5n * 10n ** 14n }],
});
const payer = await generateKeyPairSigner();
await chain.airdrop(payer.address, 100n);

const party = async () => {
  const taker = await generateKeyPairSigner();
  const owner = randomAddress();
  await chain.setTokenBalance(owner, mintB, 0n);
  const [destination] = await findAssociatedTokenPda({
    owner,
    mint: mintB,
    tokenProgram: TOKEN_PROGRAM_ADDRESS,
  });
  return { taker, destination };
};
const requestFor = (p: { taker: KeyPairSigner; destination: Address }) => ({
  inputMint: mintA,
  outputMint: mintB,
  amount: AMOUNT,
  taker: p.taker.address,
  payer: payer.address,
  destinationTokenAccount: p.destination,
  slippageBps: 50,
});

// 1. The client alone, against one fixed answer.
const first = await party();
const query = new URLSearchParams({ ...requestFor(first), amount: String(AMOUNT), slippageBps: "50" });
const answer = await (await fetch(`${server.url}/build?${query}`)).text();
const fixed = http.createServer((_req, res) => {
  res.writeHead(200, { "content-type": "application/json" }).end(answer);
});
await new Promise<void>((resolve) => fixed.listen(0, "127.0.0.1", resolve));
const client = createJupiterSwapApi({
  baseUrl: `http://127.0.0.1:${(fixed.address() as AddressInfo).port}`,
  timeoutMs: 10_000,
  maxBytes: 256 * 1024,
});
const request = requestFor(first);
for (let i = 0; i < 300; i++) await client.build(request);
let started = performance.now();
for (let i = 0; i < BUILDS; i++) await client.build(request);
let elapsed = (performance.now() - started) / 1000;
console.log(
  `client, one at a time: ${(BUILDS / elapsed).toFixed(0)} builds/s (${((elapsed * 1000) / BUILDS).toFixed(3)} ms each, ${answer.length} B answers)`,
);
started = performance.now();
await Promise.all(
  Array.from({ length: 4 }, async () => {
    for (let i = 0; i < BUILDS / 4; i++) await client.build(request);
  }),
);
elapsed = (performance.now() - started) / 1000;
console.log(`client, four at a time: ${(BUILDS / elapsed).toFixed(0)} builds/s`);

// 2. The test server on the local chain.
const api = createJupiterSwapApi({ baseUrl: server.url, timeoutMs: 10_000, maxBytes: 256 * 1024 });
for (let i = 0; i < 20; i++) await api.build(request);
started = performance.now();
for (let i = 0; i < SWAPS; i++) await api.build(request);
elapsed = (performance.now() - started) / 1000;
console.log(`test server quote on the local chain: ${((elapsed * 1000) / SWAPS).toFixed(2)} ms each`);

// One at a time: the local chain's port bounds what one client holds at once.
const swappers: Awaited<ReturnType<typeof party>>[] = [];
for (let i = 0; i < SWAPS; i++) {
  const p = await party();
  await chain.setTokenBalance(p.taker.address, mintA, AMOUNT);
  swappers.push(p);
}
started = performance.now();
for (const p of swappers) {
  const build = await api.build(requestFor(p));
  await chain.sendAndConfirm(payer, instructionsOf(build, p.taker));
}
elapsed = (performance.now() - started) / 1000;
console.log(
  `honest swap (quote, v0 transaction sent and confirmed): ${((elapsed * 1000) / SWAPS).toFixed(1)} ms each, ${(SWAPS / elapsed).toFixed(1)} swaps/s`,
);

fixed.close();
await server.close();
await local.close();

function instructionsOf(build: SwapBuild, taker: KeyPairSigner): Instruction[] {
  return [
    ...build.setupInstructions,
    build.swapInstruction,
    ...(build.cleanupInstruction === undefined ? [] : [build.cleanupInstruction]),
    ...build.otherInstructions,
  ].map((ix) => ({
    programAddress: ix.programAddress as Address,
    data: ix.data,
    accounts: ix.accounts.map((m) =>
      m.signer
        ? { address: m.address as Address, role: AccountRole.READONLY_SIGNER, signer: taker }
        : { address: m.address as Address, role: m.writable ? AccountRole.WRITABLE : AccountRole.READONLY },
    ),
  }));
}

/**
 * The embedded chain's thread answers the service's kit RPC in kit's final shape
 * (src/local-chain/worker/kit-shape.ts), and the service's RPC takes that result as it is
 * (src/chain/chain-rpc.ts). Both are held to kit's own reading of the same answer: the handler's
 * JSON text as kit's HTTP transport parses it, then kit's Solana RPC API's response transformer,
 * for every method the shapes know, on real answers (token balances, inner instructions, parsed
 * accounts included).
 */
import { randomBytes } from "node:crypto";
import {
  type Address,
  appendTransactionMessageInstructions,
  compileTransactionMessage,
  createTransactionMessage,
  generateKeyPairSigner,
  getAddressDecoder,
  getBase64EncodedWireTransaction,
  getCompiledTransactionMessageEncoder,
  pipe,
  setTransactionMessageFeePayer,
  setTransactionMessageLifetimeUsingBlockhash,
} from "@solana/kit";
import { createSolanaRpcApi } from "@solana/rpc";
import { parseJsonWithBigInts, stringifyJsonWithBigInts } from "@solana/rpc-spec-types";
import {
  findAssociatedTokenPda,
  getCreateAssociatedTokenIdempotentInstructionAsync,
  getTransferCheckedInstruction,
  TOKEN_PROGRAM_ADDRESS,
} from "@solana-program/token";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createChainRpc, KitShapedAnswer } from "../src/chain/chain-rpc.ts";
import {
  answerShaped,
  createKitShapes,
  type RunningLocalChain,
  startLocalChain,
} from "../src/local-chain/index.ts";
import { loadCatalog } from "../src/token/catalog.ts";
import { type ChainClient, createChainClient } from "./support/chain-client.ts";

let local: RunningLocalChain;
let chain: ChainClient;
const calls: [string, unknown[]][] = [];

beforeAll(async () => {
  local = await startLocalChain({ catalog: loadCatalog(), port: 0, statePath: undefined, slotMs: 400 });
  chain = createChainClient(local.url as string);
  const randomAddress = (): Address => getAddressDecoder().decode(randomBytes(32));
  const mint = await chain.createMint(6);
  const owner = await generateKeyPairSigner();
  const receiver = randomAddress();
  await chain.airdrop(owner.address, 1n);
  await chain.setTokenBalance(owner.address, mint, 5_000_000n);
  await chain.setTokenBalance(receiver, mint, 1n);
  const [source] = await findAssociatedTokenPda({
    owner: owner.address,
    mint,
    tokenProgram: TOKEN_PROGRAM_ADDRESS,
  });
  const [destination] = await findAssociatedTokenPda({
    owner: receiver,
    mint,
    tokenProgram: TOKEN_PROGRAM_ADDRESS,
  });
  const transfer = getTransferCheckedInstruction({
    source,
    mint,
    destination,
    authority: owner,
    amount: 1_500_000n,
    decimals: 6,
  });
  const signed = await chain.sign(owner, [transfer]);
  const wire = getBase64EncodedWireTransaction(signed);
  // An account creation calls the Token and System programs: inner instructions to shape.
  const creation = getBase64EncodedWireTransaction(
    await chain.sign(owner, [
      await getCreateAssociatedTokenIdempotentInstructionAsync({
        payer: owner,
        owner: randomAddress(),
        mint,
      }),
    ]),
  );
  const signature = await chain.sendAndConfirm(owner, [transfer]);
  const { value: blockhash } = await chain.rpc.getLatestBlockhash().send();
  const message = getCompiledTransactionMessageEncoder().encode(
    compileTransactionMessage(
      pipe(
        createTransactionMessage({ version: 0 }),
        (m) => setTransactionMessageFeePayer(owner.address, m),
        (m) => setTransactionMessageLifetimeUsingBlockhash(blockhash, m),
        (m) => appendTransactionMessageInstructions([transfer], m),
      ),
    ),
  );
  const parsed = { encoding: "jsonParsed" };
  calls.push(
    ["simulateTransaction", [creation, { encoding: "base64", innerInstructions: true }]],
    [
      "simulateTransaction",
      [wire, { encoding: "base64", innerInstructions: true, replaceRecentBlockhash: true }],
    ],
    [
      "simulateTransaction",
      [wire, { encoding: "base64", accounts: { addresses: [source, mint], encoding: "jsonParsed" } }],
    ],
    [
      "simulateTransaction",
      [wire, { encoding: "base64", accounts: { addresses: [destination], encoding: "base64" } }],
    ],
    ["getMultipleAccounts", [[source, mint, owner.address, randomAddress()], parsed]],
    ["getMultipleAccounts", [[source, mint, owner.address, randomAddress()], { encoding: "base64" }]],
    ["getAccountInfo", [source, parsed]],
    ["getAccountInfo", [mint, { encoding: "base64" }]],
    ["getAccountInfo", [randomAddress(), parsed]],
    ["getSignaturesForAddress", [source, { limit: 5, commitment: "confirmed" }]],
    ["getTokenAccountBalance", [source]],
    ["getTokenAccountsByOwner", [owner.address, { mint }, parsed]],
    [
      "getTokenAccountsByOwner",
      [owner.address, { programId: TOKEN_PROGRAM_ADDRESS }, { encoding: "base64" }],
    ],
    ["getTokenSupply", [mint]],
    [
      "getTransaction",
      [signature, { encoding: "json", maxSupportedTransactionVersion: 0, commitment: "confirmed" }],
    ],
    [
      "getTransaction",
      [signature, { encoding: "jsonParsed", maxSupportedTransactionVersion: 0, commitment: "confirmed" }],
    ],
    ["getBalance", [owner.address]],
    ["getBlockHeight", []],
    ["getEpochInfo", []],
    ["getFeeForMessage", [Buffer.from(message).toString("base64")]],
    ["getLatestBlockhash", [{ commitment: "confirmed" }]],
    ["getMinimumBalanceForRentExemption", [165]],
    [
      "getSignatureStatuses",
      [[signature, "1111111111111111111111111111111111111111111111111111111111111111"]],
    ],
    ["getSlot", []],
    ["isBlockhashValid", [blockhash.blockhash]],
    ["sendTransaction", [wire, { encoding: "base64" }]],
  );
}, 60_000);
afterAll(async () => {
  await local?.close();
});

/** What kit's Solana RPC makes of `response` for `method`: its own response transformer. */
async function kitReads(method: string, params: unknown[], response: unknown): Promise<unknown> {
  const api = createSolanaRpcApi() as unknown as Record<
    string,
    (...p: unknown[]) => {
      execute: (c: { transport: () => Promise<unknown> }) => Promise<unknown>;
    }
  >;
  return (api[method] as NonNullable<(typeof api)[string]>)(...params).execute({
    transport: async () => response,
  });
}

describe("answers in kit's shape", () => {
  it("every method the shapes know: the same value as kit's reading of the JSON text", async () => {
    const shapes = createKitShapes();
    const seen = new Set<string>();
    for (const [i, [method, params]] of calls.entries()) {
      expect(shapes(method), method).toBeDefined();
      seen.add(method);
      // sendTransaction lands once: compare the second answer (already processed) too.
      const payload = { jsonrpc: "2.0", id: String(i), method, params };
      const text = await local.handler.handle(stringifyJsonWithBigInts(payload));
      const { response, shaped } = await answerShaped(local.handler, payload, shapes);
      const viaText = parseJsonWithBigInts(text as string) as { result?: unknown };
      if (!("result" in viaText)) {
        // An error: passed on as kit reads it, for kit's transformer to throw.
        expect(shaped, method).toBe(false);
        expect(response, method).toEqual(viaText);
        continue;
      }
      expect(shaped, method).toBe(true);
      const kit = await kitReads(method, params, viaText);
      expect(
        (response as { result: unknown }).result,
        `${method} ${JSON.stringify(params).slice(0, 80)}`,
      ).toStrictEqual(kit);
    }
    // Each shape is exercised here, so a key path wrong or missing in one is seen.
    const known = ["simulateTransaction", "getMultipleAccounts", "getAccountInfo", "getTransaction"];
    for (const method of known) expect(seen.has(method)).toBe(true);
  });

  it("a method the shapes do not know is not shaped: kit reads it as before", async () => {
    const payload = { jsonrpc: "2.0", id: "1", method: "getVersion", params: [] };
    const { shaped } = await answerShaped(local.handler, payload, createKitShapes());
    expect(shaped).toBe(false);
  });

  it("the service's RPC takes a shaped result as it is, and reads any other answer as kit does", async () => {
    const result = { value: { lamports: 5n, decimals: 6 } };
    const rpc = createChainRpc((async () => new KitShapedAnswer(result)) as never);
    // Kit's own RPC would make `decimals` a bigint (getBalance keeps no integer as a number).
    expect(await rpc.getBalance("11111111111111111111111111111111" as Address).send()).toBe(result);
    const plain = createChainRpc((async () => ({
      jsonrpc: "2.0",
      id: "0",
      result: { context: { slot: 3n }, value: 7 },
    })) as never);
    expect(await plain.getBalance("11111111111111111111111111111111" as Address).send()).toEqual({
      context: { slot: 3n },
      value: 7n,
    });
    // An answer that merely has the shape (as a socket could send it) is walked by kit as any other.
    const forged = createChainRpc((async () => ({
      jsonrpc: "2.0",
      id: "0",
      result: { value: 7 },
      shaped: true,
    })) as never);
    expect(await forged.getBalance("11111111111111111111111111111111" as Address).send()).toEqual({
      value: 7n,
    });
    const failing = createChainRpc((async () => ({
      jsonrpc: "2.0",
      id: "0",
      error: { code: -32602, message: "Invalid params" },
    })) as never);
    await expect(failing.getBalance("11111111111111111111111111111111" as Address).send()).rejects.toThrow(
      /Invalid params/,
    );
  });
});

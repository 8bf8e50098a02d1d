/**
 * Our hand-written code against the library it replaces, on the inputs the service sees: each
 * case checks that both give the same output for every input, then times them in alternation in
 * this one process (see alternate.ts) and prints the medians, the spread over rounds and the
 * ratio library ÷ ours. docs/performance.md, "Our code where a library exists", holds the figures
 * and what was decided from them.
 *
 *   npm run bench:library                    # every case
 *   npm run bench:library -- base58 json     # the cases whose name contains one of the words
 *   BENCH_ROUNDS=7 BENCH_ROUND_MS=150        # rounds of each side, and about how long a round is
 */
import { createHash } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { createMethodSerializationLookup } from "@connectrpc/connect/protocol";
import {
  type Address,
  compileTransaction,
  compileTransactionMessage,
  compressTransactionMessageUsingAddressLookupTables,
  createKeyPairFromPrivateKeyBytes,
  createNoopSigner,
  getBase58Decoder,
  getBase58Encoder,
  getCompiledTransactionMessageDecoder,
  getCompiledTransactionMessageEncoder,
  getTransactionDecoder,
  getTransactionEncoder,
  type Instruction,
  signBytes,
} from "@solana/kit";
import { parseJsonWithBigInts, stringifyJsonWithBigInts } from "@solana/rpc-spec-types";
import {
  findAssociatedTokenPda,
  getCloseAccountInstruction,
  getCreateAssociatedTokenIdempotentInstruction,
  getTransferCheckedInstruction,
  TOKEN_PROGRAM_ADDRESS,
} from "@solana-program/token";
import { AgentService } from "../../../gen/agent/v1/agent_pb.ts";
import { TokenPriceSchema, TokenService } from "../../../gen/token/v1/token_pb.ts";
import {
  base58Address,
  base58AddressBytes,
  base58Bytes,
  base58Text,
} from "../../../src/chain/base58-address.ts";
import { compiledMessageBytes, compiledTransaction } from "../../../src/chain/compiled-transaction.ts";
import { signingKeyFromSeed } from "../../../src/chain/ed25519-key.ts";
import { parseJsonBigInts, stringifyJsonBigInts } from "../../../src/chain/json-bigints.ts";
import { associatedTokenAddress } from "../../../src/chain/program-address.ts";
import { memoInstruction, PROGRAMS, transactionMessage } from "../../../src/chain/token-transactions.ts";
import { parseV0Message } from "../../../src/chain/v0-message.ts";
import { createBinaryEncoder } from "../../../src/lean/binary-encoder.ts";
import { deepFreeze } from "../../../src/lean/deep-freeze.ts";
import { createJsonEncoder } from "../../../src/lean/json-encoder.ts";
import { decodeTransactionBytes } from "../../../src/local-chain/index.ts";
import { agentSummary } from "../../../src/rpc/messages/agent-messages.ts";
import { loadCatalog } from "../../../src/token/catalog.ts";
import { alternate, type Case, report } from "./alternate.ts";

// Real keys: Ed25519 public keys from fixed seeds, so that every run sees the same inputs.
const keyOf = (label: string) => signingKeyFromSeed(createHash("sha256").update(label).digest());
const keys = Array.from({ length: 64 }, (_, i) => keyOf(`bench key ${i}`));
const catalog = loadCatalog();
const usdc = catalog.tokens.find((t) => t.symbol === "USDC");
const jup = catalog.tokens.find((t) => t.symbol === "JUP");
if (usdc === undefined || jup === undefined) throw new Error("the catalog lacks USDC or JUP");
const USDC = { mint: usdc.mint, program: "spl-token" as const, decimals: usdc.decimals };
const JUP = { mint: jup.mint, program: "spl-token" as const, decimals: jup.decimals };
const at = (i: number) => keys[i % keys.length] as (typeof keys)[number];
const blockhashOf = (i: number) => base58Address(createHash("sha256").update(`blockhash ${i}`).digest());
const ata = (owner: string, mint: string) =>
  associatedTokenAddress(owner, mint, TOKEN_PROGRAM_ADDRESS) as Address;

/**
 * A keeper's transfer message, as delegatedTransferTransaction builds it (token-transactions.ts):
 * the executor pays, the wallet's delegate signs transferChecked, a memo names the run; every
 * other one creates the destination's account first.
 */
function transferMessage(i: number) {
  const feePayer = at(0);
  const delegate = at(1 + (i % 7));
  const source = at(10 + i).address;
  const destination = at(30 + i).address;
  const payer = createNoopSigner(feePayer.address);
  const instructions: Instruction[] = [
    ...(i % 2 === 0
      ? [
          getCreateAssociatedTokenIdempotentInstruction({
            payer,
            ata: ata(destination, USDC.mint),
            owner: destination,
            mint: USDC.mint as Address,
            tokenProgram: TOKEN_PROGRAM_ADDRESS,
          }),
        ]
      : []),
    getTransferCheckedInstruction({
      source: ata(source, USDC.mint),
      mint: USDC.mint as Address,
      destination: ata(destination, USDC.mint),
      authority: createNoopSigner(delegate.address),
      amount: 1_000_000n + BigInt(i),
      decimals: USDC.decimals,
    }),
    memoInstruction(`agent ${at(50 + i).address.slice(0, 22)} slot ${1_000_000 + i}`),
  ];
  return transactionMessage(payer, instructions, { blockhash: blockhashOf(i), lastValidBlockHeight: 1000n });
}

/**
 * A swap's message, as swapTransaction builds it (swap-transaction.ts): the budget, the taker's
 * input account, the delegate's transfer to the taker, the route (the embedded chain's
 * constant-product route: the taker pays the pool's input vault, the output vault pays the owner),
 * the taker's account closed, the memo; the route's vaults through a lookup table.
 */
function swapMessage(i: number) {
  const feePayer = at(0);
  const delegate = at(1 + (i % 7));
  const taker = at(20 + i);
  const owner = at(40 + i).address;
  const payer = createNoopSigner(feePayer.address);
  const takerSigner = createNoopSigner(taker.address);
  const takerInput = ata(taker.address, USDC.mint);
  const pool = at(60 + (i % 4)).address;
  const [vaultIn, vaultOut] = [ata(pool, USDC.mint), ata(pool, JUP.mint)];
  const budget = (tag: number, length: number) => {
    const data = new Uint8Array(length);
    data[0] = tag;
    return { programAddress: "ComputeBudget111111111111111111111111111111" as Address, data };
  };
  const instructions: Instruction[] = [
    budget(2, 5),
    budget(3, 9),
    getCreateAssociatedTokenIdempotentInstruction({
      payer,
      ata: takerInput,
      owner: taker.address,
      mint: USDC.mint as Address,
      tokenProgram: TOKEN_PROGRAM_ADDRESS,
    }),
    getTransferCheckedInstruction({
      source: ata(owner, USDC.mint),
      mint: USDC.mint as Address,
      destination: takerInput,
      authority: createNoopSigner(delegate.address),
      amount: 1_000_000n,
      decimals: USDC.decimals,
    }),
    getTransferCheckedInstruction({
      source: takerInput,
      mint: USDC.mint as Address,
      destination: vaultIn,
      authority: takerSigner,
      amount: 1_000_000n,
      decimals: USDC.decimals,
    }),
    getTransferCheckedInstruction({
      source: vaultOut,
      mint: JUP.mint as Address,
      destination: ata(owner, JUP.mint),
      authority: takerSigner,
      amount: 1_700_000n + BigInt(i),
      decimals: JUP.decimals,
    }),
    getCloseAccountInstruction(
      { account: takerInput, destination: feePayer.address, owner: takerSigner },
      { programAddress: PROGRAMS["spl-token"] },
    ),
    memoInstruction(`agent ${at(50 + i).address.slice(0, 22)} slot ${1_000_000 + i}`),
  ];
  const table = at(62 + (i % 2)).address;
  return compressTransactionMessageUsingAddressLookupTables(
    transactionMessage(payer, instructions, { blockhash: blockhashOf(i), lastValidBlockHeight: 1000n }),
    { [table]: [vaultIn, vaultOut, JUP.mint as Address, at(61).address] },
  );
}

const transfers = Array.from({ length: 16 }, (_, i) => transferMessage(i));
const swaps = Array.from({ length: 16 }, (_, i) => swapMessage(i));
const compiledTransfers = transfers.map((m) => compileTransactionMessage(m));
const compiledSwaps = swaps.map((m) => compileTransactionMessage(m));
const kitMessageEncoder = getCompiledTransactionMessageEncoder();
const kitMessageDecoder = getCompiledTransactionMessageDecoder();
const kitTransactionDecoder = getTransactionDecoder();
const kitTransactionEncoder = getTransactionEncoder();
/** A signed wire transaction as the executor sends it: each signer's signature of the message. */
const signedWire = (message: ReturnType<typeof transferMessage> | ReturnType<typeof swapMessage>) => {
  const compiled = compileTransaction(message);
  const signatures: Record<string, Uint8Array> = {};
  for (const signer of Object.keys(compiled.signatures)) {
    const key = keys.find((k) => k.address === signer);
    if (key === undefined) throw new Error(`no key for ${signer}`);
    signatures[signer] = key.sign(compiled.messageBytes as unknown as Uint8Array);
  }
  return new Uint8Array(kitTransactionEncoder.encode({ ...compiled, signatures } as never));
};
const wires = [...transfers.slice(0, 8), ...swaps.slice(0, 8)].map(signedWire);
const signatures = wires.map((w) => w.slice(1, 65));

const kitBase58Text = getBase58Decoder(); // bytes → text
const kitBase58Bytes = getBase58Encoder(); // text → bytes
const publicKeys = keys.map((k) => k.publicKey);
const keyTexts = keys.map((k) => k.address as string);
const signatureTexts = signatures.map((s) => kitBase58Text.decode(s));

// What the lean path answers: GetTokenPrices without a filter (the catalog's 16 entries, as the
// token service creates them: each entry a cached, deeply frozen message, whose JSON and binary
// our encoders remember; see src/lean/deep-freeze.ts) and a ListAgents page of 10 (the default)
// and of 100 (the most), created anew for each call.
const jsonOptions = { alwaysEmitImplicit: true, registry: undefined };
const pricesMethod = TokenService.method.getTokenPrices;
const listMethod = AgentService.method.listAgents;
const priceEntries = catalog.tokens.map((t) =>
  deepFreeze(
    create(TokenPriceSchema, {
      mint: t.mint,
      symbol: t.symbol,
      price: t.price,
      change24h: t.change24h,
      asOf: timestampFromDate(new Date(catalog.asOf)),
      slot: 0n,
      unpriced: false,
    }),
  ),
);
const prices = create(pricesMethod.output, { success: true, data: priceEntries });
const agentsPage = (n: number) =>
  create(listMethod.output, {
    success: true,
    data: {
      agents: Array.from({ length: n }, (_, i) =>
        agentSummary({
          agentId: createHash("sha256").update(`agent ${i}`).digest().subarray(0, 16).toString("base64url"),
          type: i % 3 === 0 ? "swap" : "transfer",
          status: i % 5 === 0 ? "pending" : "active",
          createdAt: new Date(Date.UTC(2026, 10, 1, 12, 0, i, i * 7)),
        } as never),
      ),
      total: 250,
      limit: n,
      offset: 0,
    },
  });
const serialization = (method: typeof pricesMethod | typeof listMethod) =>
  createMethodSerializationLookup(method as never, undefined, jsonOptions, {
    readMaxBytes: 4 * 1024 * 1024,
    writeMaxBytes: 0xffffffff,
  });
const pricesSerialization = serialization(pricesMethod);
const listSerialization = serialization(listMethod);
const pricesJson = createJsonEncoder(pricesMethod.output, jsonOptions);
const listJson = createJsonEncoder(listMethod.output, jsonOptions);
const pricesBinary = createBinaryEncoder(pricesMethod.output);
const listBinary = createBinaryEncoder(listMethod.output);
if (!pricesJson || !listJson || !pricesBinary || !listBinary) throw new Error("an encoder is missing");
const pages = [agentsPage(10), agentsPage(100)];
/** Our encoders copy into a pooled Buffer; compare bytes, not the class. */
const bytes = (b: Uint8Array | undefined) => (b === undefined ? undefined : new Uint8Array(b));

/**
 * What the cluster answers for a getMultipleAccounts of 8 token accounts (base64, as the service
 * asks), with mainnet's numbers: a rentEpoch of u64::MAX and a slot past 2^28.
 */
const multipleAccountsAnswer = JSON.stringify({
  jsonrpc: "2.0",
  result: {
    context: { apiVersion: "2.2.14", slot: 341_234_567 },
    value: Array.from({ length: 8 }, (_, i) => ({
      data: [
        Buffer.from(createHash("sha512").update(`account ${i}`).digest())
          .toString("base64")
          .repeat(2)
          .slice(0, 220),
        "base64",
      ],
      executable: false,
      lamports: 2_039_280,
      owner: TOKEN_PROGRAM_ADDRESS,
      rentEpoch: "RENT_EPOCH",
      space: 165,
    })),
  },
  id: 7,
}).replaceAll('"RENT_EPOCH"', "18446744073709551615");
/** A swap's read: its route's two lookup tables (Jupiter's hold 256 keys each) and 8 token accounts. */
const swapReadAnswer = multipleAccountsAnswer.replace(
  '"value":[',
  `"value":${JSON.stringify(
    [0, 1].map((t) => ({
      data: [
        Buffer.concat([
          Buffer.alloc(56, t),
          ...Array.from({ length: 256 }, (_, i) => createHash("sha256").update(`table ${t} ${i}`).digest()),
        ]).toString("base64"),
        "base64",
      ],
      executable: false,
      lamports: 57_800_000,
      owner: "AddressLookupTab1e1111111111111111111111111",
      rentEpoch: 0,
      space: 56 + 32 * 256,
    })),
  ).slice(0, -1)},`,
);
const sendRequest = {
  jsonrpc: "2.0",
  id: 8,
  method: "sendTransaction",
  params: [
    Buffer.from(wires[8] as Uint8Array).toString("base64"),
    { encoding: "base64", preflightCommitment: "confirmed", maxRetries: 0n },
  ],
};
const kitKeyPairs = await Promise.all(
  [0, 1, 2].map((i) =>
    createKeyPairFromPrivateKeyBytes(createHash("sha256").update(`bench key ${i}`).digest()),
  ),
);

const TRANSFER_PATH = "executor: one per transfer run (transfer-executor → delegatedTransferTransaction)";
const SWAP_PATH = "executor: one per swap run (swap-executor → swapTransaction)";

// biome-ignore lint/suspicious/noExplicitAny: a list of cases of different input and output types
type AnyCase = Case<any, any>;
const cases: AnyCase[] = [
  {
    name: "base58 encode: 32-byte public key (base58Address, memo warm) vs kit getBase58Decoder",
    path: "every key the service and the embedded chain name: dozens a swap",
    inputs: publicKeys,
    ours: base58Address,
    library: (b: Uint8Array) => kitBase58Text.decode(b),
  },
  {
    name: "base58 encode: 32-byte public key, no memo (base58Text) vs kit",
    path: "a key not seen in the last 8,192",
    inputs: publicKeys,
    ours: base58Text,
    library: (b: Uint8Array) => kitBase58Text.decode(b),
  },
  {
    name: "base58 encode: 64-byte signature (base58Text) vs kit",
    path: "one a transfer or swap (its signature); the embedded chain's signatures",
    inputs: signatures,
    ours: base58Text,
    library: (b: Uint8Array) => kitBase58Text.decode(b),
  },
  {
    name: "base58 decode: public key text (base58AddressBytes, memo warm) vs kit getBase58Encoder",
    path: "every address checked (isBase58Address) or read as bytes: dozens a swap",
    inputs: keyTexts,
    ours: base58AddressBytes,
    library: (t: string) => kitBase58Bytes.encode(t),
    comparable: bytes,
  },
  {
    name: "base58 decode: public key text, no memo (base58Bytes) vs kit",
    path: "a key not seen in the last 8,192",
    inputs: keyTexts,
    ours: base58Bytes,
    library: (t: string) => kitBase58Bytes.encode(t),
    comparable: bytes,
  },
  {
    name: "base58 decode: 88-char signature text (base58Bytes) vs kit",
    path: "the embedded chain's signature params",
    inputs: signatureTexts,
    ours: base58Bytes,
    library: (t: string) => kitBase58Bytes.encode(t),
    comparable: bytes,
  },
  {
    name: "message encoder, transfer: compiledMessageBytes vs kit getCompiledTransactionMessageEncoder",
    path: TRANSFER_PATH,
    inputs: compiledTransfers,
    ours: compiledMessageBytes,
    library: (m: never) => kitMessageEncoder.encode(m),
    comparable: bytes,
  },
  {
    name: "message encoder, swap: compiledMessageBytes vs kit",
    path: SWAP_PATH,
    inputs: compiledSwaps,
    ours: compiledMessageBytes,
    library: (m: never) => kitMessageEncoder.encode(m),
    comparable: bytes,
  },
  {
    name: "compile + encode, transfer: compiledTransaction (kit's compile, our encoder) vs kit compileTransaction",
    path: TRANSFER_PATH,
    inputs: transfers,
    ours: compiledTransaction,
    library: compileTransaction,
    comparable: (t: ReturnType<typeof compileTransaction>) => ({
      message: new Uint8Array(t.messageBytes),
      signers: Object.keys(t.signatures),
      lifetime: (t as { lifetimeConstraint?: unknown }).lifetimeConstraint,
    }),
  },
  {
    name: "compile + encode, swap: compiledTransaction (kit's compile, our encoder) vs kit compileTransaction",
    path: SWAP_PATH,
    inputs: swaps,
    ours: compiledTransaction,
    library: compileTransaction,
    comparable: (t: ReturnType<typeof compileTransaction>) => ({
      message: new Uint8Array(t.messageBytes),
      signers: Object.keys(t.signatures),
      lifetime: (t as { lifetimeConstraint?: unknown }).lifetimeConstraint,
    }),
  },
  {
    name: "v0 message layout, swap: parseV0Message vs kit getCompiledTransactionMessageDecoder",
    path: `${SWAP_PATH}; transfer-executor reads its signers`,
    inputs: compiledSwaps.map((m) => new Uint8Array(kitMessageEncoder.encode(m))),
    ours: parseV0Message,
    library: (b: Uint8Array) => kitMessageDecoder.decode(b),
    comparable: (m: {
      staticAccounts: readonly string[];
      addressTableLookups?: readonly { lookupTableAddress: string }[];
      numSignerAccounts?: number;
      header?: { numSignerAccounts: number };
    }) => ({
      keys: [...m.staticAccounts],
      signers: m.numSignerAccounts ?? m.header?.numSignerAccounts,
      tables: (m.addressTableLookups ?? []).map((l) => l.lookupTableAddress),
    }),
  },
  {
    name: "associated token account: associatedTokenAddress vs @solana-program/token findAssociatedTokenPda",
    path: "a swap's taker's input account, every swap run (transfers' are cached)",
    inputs: keys.map((k) => k.address),
    ours: (owner: string) => associatedTokenAddress(owner, USDC.mint, TOKEN_PROGRAM_ADDRESS),
    library: async (owner: string) =>
      (
        await findAssociatedTokenPda({
          owner: owner as Address,
          mint: USDC.mint as Address,
          tokenProgram: TOKEN_PROGRAM_ADDRESS,
        })
      )[0],
  },
  {
    name: "wire transaction decode: decodeTransactionBytes vs kit getTransactionDecoder + message decoder",
    path: "embedded chain (development only): every simulation and send",
    inputs: wires,
    ours: decodeTransactionBytes,
    library: (b: Uint8Array) => {
      const transaction = kitTransactionDecoder.decode(b);
      return { transaction, message: kitMessageDecoder.decode(transaction.messageBytes) };
    },
  },
  {
    name: "JSON answer, GetTokenPrices (16 prices, 1.7 KB): createJsonEncoder vs connect's toJsonString serializer",
    path: "every Connect JSON unary call on the lean path",
    inputs: [prices],
    ours: (m: never) => pricesJson(m),
    library: (m: never) => pricesSerialization.getO(false).serialize(m),
    comparable: bytes,
  },
  ...pages.map(
    (page, i): AnyCase => ({
      name: `JSON answer, ListAgents (a page of ${[10, 100][i]}): createJsonEncoder vs connect's toJsonString serializer`,
      path: "every Connect JSON unary call on the lean path",
      inputs: [page],
      ours: (m: never) => listJson(m),
      library: (m: never) => listSerialization.getO(false).serialize(m),
      comparable: bytes,
    }),
  ),
  {
    name: "binary answer, GetTokenPrices: createBinaryEncoder vs connect's toBinary serializer",
    path: "every gRPC / binary unary call on the lean path",
    inputs: [prices],
    ours: (m: never) => pricesBinary(m),
    library: (m: never) => pricesSerialization.getO(true).serialize(m),
    comparable: bytes,
  },
  ...pages.map(
    (page, i): AnyCase => ({
      name: `binary answer, ListAgents (a page of ${[10, 100][i]}): createBinaryEncoder vs connect's toBinary serializer`,
      path: "every gRPC / binary unary call on the lean path",
      inputs: [page],
      ours: (m: never) => listBinary(m),
      library: (m: never) => listSerialization.getO(true).serialize(m),
      comparable: bytes,
    }),
  ),
  {
    name: "Ed25519 signature of a swap message: signingKeyFromSeed().sign (node:crypto) vs kit signBytes (WebCrypto)",
    path: "three a swap run, two a transfer run",
    inputs: compiledSwaps.map((m, i) => ({
      message: new Uint8Array(kitMessageEncoder.encode(m)),
      key: i % 3,
    })),
    ours: ({ message, key }: { message: Uint8Array; key: number }) =>
      (keys[key] as (typeof keys)[number]).sign(message),
    library: ({ message, key }: { message: Uint8Array; key: number }) =>
      signBytes((kitKeyPairs[key] as (typeof kitKeyPairs)[number]).privateKey, message),
    comparable: bytes,
  },
  {
    name: "RPC answer parse, getMultipleAccounts (8 token accounts, 3.6 KB): parseJsonBigInts vs kit parseJsonWithBigInts",
    path: "every answer of the cluster's JSON-RPC (SOLANA_RPC_URL): a read or two a run",
    inputs: [multipleAccountsAnswer],
    ours: parseJsonBigInts,
    library: parseJsonWithBigInts,
  },
  {
    name: "RPC answer parse, a swap's getMultipleAccounts (two lookup tables of 256 keys, 8 token accounts, 27 KB): parseJsonBigInts vs kit",
    path: "a swap's read on the cluster (SOLANA_RPC_URL), once a run",
    inputs: [swapReadAnswer],
    ours: parseJsonBigInts,
    library: parseJsonWithBigInts,
  },
  {
    name: "RPC request text, sendTransaction: stringifyJsonBigInts vs kit stringifyJsonWithBigInts",
    path: "every request to the cluster's JSON-RPC (SOLANA_RPC_URL)",
    inputs: [sendRequest],
    ours: stringifyJsonBigInts,
    library: stringifyJsonWithBigInts,
  },
  {
    name: "RPC answer text, the embedded chain's getBlocks of 50,000 slots (bigints): stringifyJsonBigInts vs kit",
    path: "embedded chain (development): answers dense in u64s (getBlocks, slots, lamports)",
    inputs: [
      { jsonrpc: "2.0", result: Array.from({ length: 50_000 }, (_, i) => 341_000_000n + BigInt(i)), id: 9 },
    ],
    ours: stringifyJsonBigInts,
    library: stringifyJsonWithBigInts,
  },
  {
    name: "RPC answer text, the embedded chain's getMultipleAccounts answer: stringifyJsonBigInts vs kit",
    path: "embedded chain (development): every answer with a u64 in it",
    inputs: [parseJsonBigInts(swapReadAnswer)],
    ours: stringifyJsonBigInts,
    library: stringifyJsonWithBigInts,
  },
];

const words = process.argv.slice(2);
const chosen =
  words.length === 0 ? cases : cases.filter((c) => words.some((w) => c.name.toLowerCase().includes(w)));
if (chosen.length === 0) throw new Error(`no case matches ${words.join(", ")}`);
for (const c of chosen) console.log(report(await alternate(c)));

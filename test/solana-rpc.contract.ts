/**
 * The Solana JSON-RPC surface, as a contract any node must meet: the embedded local chain over
 * HTTP, and, read-only, a real cluster (SOLANA_RPC_URL_TEST). Each method is called twice: through
 * @solana/kit's typed client (whose transformers must accept every answer), and raw, with the answer
 * checked field by field against the shapes Solana's JSON-RPC documentation gives.
 *
 * Read-only runs find their fixtures on the cluster itself: the native mint exists on every
 * cluster, its history names transactions, and those name token accounts and their owners.
 */

import {
  type Address,
  address,
  appendTransactionMessageInstruction,
  type Blockhash,
  compileTransaction,
  createNoopSigner,
  createSolanaRpc,
  createTransactionMessage,
  devnet,
  generateKeyPairSigner,
  getBase64Decoder,
  getBase64EncodedWireTransaction,
  pipe,
  type Signature,
  setTransactionMessageFeePayerSigner,
  setTransactionMessageLifetimeUsingBlockhash,
  signTransactionMessageWithSigners,
} from "@solana/kit";
import { getTransferSolInstruction } from "@solana-program/system";
import { beforeAll, describe, expect, it } from "vitest";

const TOKEN_PROGRAM = address("TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA");
const SYSTEM_PROGRAM = address("11111111111111111111111111111111");
const BASE58_SIGNATURE = /^[1-9A-HJ-NP-Za-km-z]{64,88}$/;
const BASE58_ADDRESS = /^[1-9A-HJ-NP-Za-km-z]{32,44}$/;

export interface RpcTarget {
  readonly url: string;
  /** Whether the suite may send transactions and ask for airdrops (never on a real cluster). */
  readonly writable: boolean;
  /** A mint with history and an SPL Token mint account (USDC on the local chain; the native mint elsewhere). */
  readonly mint: Address;
}

// Shapes, as the documentation gives them. `u64` fields are JSON integers.
const u64 = expect.any(Number);
const context = { slot: u64, apiVersion: expect.any(String) };
const optional = (shape: unknown) =>
  expect.toSatisfy((v: unknown) => v === undefined || v === null || shapeOk(v, shape));
const tokenAmount = {
  amount: expect.stringMatching(/^\d+$/),
  decimals: expect.any(Number),
  uiAmount: expect.toSatisfy((v: unknown) => v === null || typeof v === "number"),
  uiAmountString: expect.stringMatching(/^\d+(\.\d+)?$/),
};
const tokenBalance = {
  accountIndex: expect.any(Number),
  mint: expect.stringMatching(BASE58_ADDRESS),
  owner: expect.stringMatching(BASE58_ADDRESS),
  programId: expect.stringMatching(BASE58_ADDRESS),
  uiTokenAmount: tokenAmount,
};
const account = (data: unknown) => ({
  data,
  executable: expect.any(Boolean),
  lamports: u64,
  owner: expect.stringMatching(BASE58_ADDRESS),
  rentEpoch: u64,
  space: u64,
});

function shapeOk(value: unknown, shape: unknown): boolean {
  try {
    expect(value).toEqual(shape);
    return true;
  } catch {
    return false;
  }
}

export function describeSolanaRpc(name: string, target: () => RpcTarget | undefined, skipReason?: string) {
  describe.skipIf(skipReason !== undefined)(`Solana JSON-RPC: ${name}`, () => {
    let t: RpcTarget;
    let rpc: ReturnType<typeof createSolanaRpc>;
    /** A transaction of the mint's history, one of its token accounts, and that account's owner. */
    let signature: Signature;
    let tokenAccount: Address;
    let owner: Address;
    let id = 0;
    const raw = async (method: string, params?: unknown) => {
      const response = await fetch(t.url, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          jsonrpc: "2.0",
          id: ++id,
          method,
          ...(params === undefined ? {} : { params }),
        }),
      });
      expect(response.headers.get("content-type")).toMatch(/^application\/json/);
      const body = (await response.json()) as Record<string, unknown>;
      return body;
    };
    /** A successful raw call's result, checked for the JSON-RPC envelope. */
    const result = async (method: string, params?: unknown) => {
      const body = await raw(method, params);
      expect(Object.keys(body).sort(), method).toEqual(["id", "jsonrpc", "result"]);
      expect(body, method).toMatchObject({ jsonrpc: "2.0", id });
      return body.result as never;
    };
    /** Polls a signature's status until a commitment above processed sees it. */
    const confirmedStatus = async (signature: Signature) => {
      const until = Date.now() + 10_000;
      for (;;) {
        const [status] = (await rpc.getSignatureStatuses([signature]).send()).value;
        if (status && status.confirmationStatus !== "processed") return status;
        if (Date.now() > until) throw new Error(`${signature} was not confirmed within 10 s`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    };
    const failure = async (method: string, params: unknown) => {
      const body = await raw(method, params);
      expect(body, method).toEqual({
        jsonrpc: "2.0",
        error: expect.objectContaining({ code: expect.any(Number), message: expect.any(String) }),
        id,
      });
      return body.error as { code: number; message: string; data?: unknown };
    };

    beforeAll(async () => {
      const found = target();
      if (found === undefined) throw new Error("no target");
      t = found;
      rpc = createSolanaRpc(t.url);
      const history = await rpc.getSignaturesForAddress(t.mint, { limit: 20 }).send();
      for (const entry of history) {
        if (entry.err !== null) continue;
        const tx = await rpc
          .getTransaction(entry.signature, { encoding: "json", maxSupportedTransactionVersion: 0 })
          .send();
        const balance = tx?.meta?.postTokenBalances?.find((b) => b.mint === t.mint && b.owner !== undefined);
        if (tx === null || balance === undefined) continue;
        signature = entry.signature;
        tokenAccount = tx.transaction.message.accountKeys[Number(balance.accountIndex)] as Address;
        owner = balance.owner as Address;
        break;
      }
      if (signature === undefined) throw new Error(`no transaction of ${t.mint} with a token balance found`);
    });

    it("getHealth, getVersion, getSlot, getBlockHeight", async () => {
      expect(await rpc.getHealth().send()).toBe("ok");
      expect(await result("getHealth")).toBe("ok");
      const version = await rpc.getVersion().send();
      expect(version["solana-core"]).toMatch(/^\d+\.\d+\.\d+/);
      expect(await result("getVersion")).toEqual({
        "solana-core": expect.any(String),
        "feature-set": expect.any(Number),
      });
      const slot = await rpc.getSlot({ commitment: "confirmed" }).send();
      expect(typeof slot).toBe("bigint");
      expect(await result("getSlot", [{ commitment: "confirmed" }])).toBeGreaterThanOrEqual(Number(slot));
      expect(await rpc.getSlot({ commitment: "finalized" }).send()).toBeLessThanOrEqual(slot);
      expect(await result("getBlockHeight")).toEqual(u64);
      expect(typeof (await rpc.getBlockHeight().send())).toBe("bigint");
    });

    it("getEpochInfo", async () => {
      // Exactly Agave's keys: kit's and web3.js's parsers read these and no others.
      const info = (await result("getEpochInfo", [{ commitment: "confirmed" }])) as Record<string, number>;
      expect(info).toEqual({
        absoluteSlot: u64,
        blockHeight: u64,
        epoch: u64,
        slotIndex: u64,
        slotsInEpoch: u64,
        transactionCount: u64,
      });
      expect(info.slotIndex).toBeLessThan(info.slotsInEpoch as number);
      expect((info.epoch as number) * (info.slotsInEpoch as number) + (info.slotIndex as number)).toBe(
        info.absoluteSlot,
      );
      const typed = await rpc.getEpochInfo({ commitment: "finalized" }).send();
      expect(typed.absoluteSlot).toBeLessThanOrEqual(BigInt(info.absoluteSlot as number));
      expect(typeof typed.transactionCount).toBe("bigint");
      expect(await rpc.getSlot({ commitment: "finalized" }).send()).toBeGreaterThanOrEqual(
        typed.absoluteSlot,
      );
    });

    it("getLatestBlockhash and isBlockhashValid", async () => {
      const latest = await rpc.getLatestBlockhash({ commitment: "confirmed" }).send();
      expect(latest.value.lastValidBlockHeight).toBeGreaterThan(
        await rpc.getBlockHeight({ commitment: "confirmed" }).send(),
      );
      expect(await result("getLatestBlockhash", [{ commitment: "confirmed" }])).toEqual({
        context,
        value: { blockhash: expect.stringMatching(BASE58_ADDRESS), lastValidBlockHeight: u64 },
      });
      const valid = await rpc.isBlockhashValid(latest.value.blockhash, { commitment: "processed" }).send();
      expect(valid.value).toBe(true);
      expect(
        await result("isBlockhashValid", ["11111111111111111111111111111111", { commitment: "processed" }]),
      ).toEqual({
        context,
        value: false,
      });
    });

    it("getBalance, getMinimumBalanceForRentExemption", async () => {
      const balance = await rpc.getBalance(owner).send();
      expect(typeof balance.value).toBe("bigint");
      expect(await result("getBalance", [owner])).toEqual({ context, value: u64 });
      expect(await rpc.getMinimumBalanceForRentExemption(165n).send()).toBe(2_039_280n);
      expect(await result("getMinimumBalanceForRentExemption", [0])).toBe(890_880);
    });

    it("getAccountInfo: base64, base58, jsonParsed for a mint and a token account, null for no account", async () => {
      const mint = await rpc.getAccountInfo(t.mint, { encoding: "base64" }).send();
      expect(mint.value?.owner).toBe(TOKEN_PROGRAM);
      expect(mint.value?.space).toBe(82n);
      expect(await result("getAccountInfo", [t.mint, { encoding: "base64" }])).toEqual({
        context,
        value: account([expect.any(String), "base64"]),
      });
      expect(await result("getAccountInfo", [t.mint, { encoding: "base58" }])).toEqual({
        context,
        value: account([expect.any(String), "base58"]),
      });
      const parsedMint = await rpc.getAccountInfo(t.mint, { encoding: "jsonParsed" }).send();
      expect(parsedMint.value?.data).toMatchObject({ program: "spl-token", parsed: { type: "mint" } });
      expect(await result("getAccountInfo", [t.mint, { encoding: "jsonParsed" }])).toEqual({
        context,
        value: account({
          program: "spl-token",
          parsed: {
            type: "mint",
            info: {
              decimals: expect.any(Number),
              freezeAuthority: optional(expect.stringMatching(BASE58_ADDRESS)),
              isInitialized: true,
              mintAuthority: optional(expect.stringMatching(BASE58_ADDRESS)),
              supply: expect.stringMatching(/^\d+$/),
            },
          },
          space: 82,
        }),
      });
      const parsedAccount = (await result("getAccountInfo", [tokenAccount, { encoding: "jsonParsed" }])) as {
        value: { data: { parsed: { info: Record<string, unknown> } } };
      };
      expect(parsedAccount).toEqual({
        context,
        value: account({
          program: expect.stringMatching(/^spl-token(-2022)?$/),
          parsed: {
            type: "account",
            info: expect.objectContaining({
              isNative: expect.any(Boolean),
              mint: t.mint,
              owner,
              state: expect.stringMatching(/^(initialized|frozen)$/),
              tokenAmount,
            }),
          },
          space: expect.any(Number),
        }),
      });
      expect(
        await rpc
          .getAccountInfo(address("6dD9GxZ6uq8P9LhTpTfKsdXfXX7ewQ1xMeVdJB2S9YGx"), { encoding: "base64" })
          .send(),
      ).toMatchObject({
        value: null,
      });
    });

    it("getMultipleAccounts", async () => {
      const { value } = await rpc
        .getMultipleAccounts(
          [t.mint, SYSTEM_PROGRAM, address("6dD9GxZ6uq8P9LhTpTfKsdXfXX7ewQ1xMeVdJB2S9YGx")],
          { encoding: "base64" },
        )
        .send();
      expect(value.map((a) => a === null)).toEqual([false, false, true]);
      expect(await result("getMultipleAccounts", [[t.mint], { encoding: "jsonParsed" }])).toEqual({
        context,
        value: [account(expect.objectContaining({ program: "spl-token" }))],
      });
    });

    it("getTokenAccountBalance, getTokenSupply, getTokenAccountsByOwner by mint", async () => {
      const balance = await rpc.getTokenAccountBalance(tokenAccount).send();
      expect(balance.value.decimals).toBeGreaterThanOrEqual(0);
      expect(await result("getTokenAccountBalance", [tokenAccount])).toEqual({ context, value: tokenAmount });
      expect(await result("getTokenSupply", [t.mint])).toEqual({ context, value: tokenAmount });
      const owned = await rpc
        .getTokenAccountsByOwner(owner, { mint: t.mint }, { encoding: "jsonParsed" })
        .send();
      expect(owned.value.map((a) => a.pubkey)).toContain(tokenAccount);
      expect(
        await result("getTokenAccountsByOwner", [owner, { mint: t.mint }, { encoding: "base64" }]),
      ).toEqual({
        context,
        value: expect.arrayContaining([
          { pubkey: tokenAccount, account: account([expect.any(String), "base64"]) },
        ]),
      });
    });

    it("getSignaturesForAddress: newest first, limit, before and until", async () => {
      const list = await rpc.getSignaturesForAddress(t.mint, { limit: 5 }).send();
      expect(list).toHaveLength(5);
      const slots = list.map((e) => e.slot);
      expect([...slots].sort((a, b) => (a > b ? -1 : a < b ? 1 : 0))).toEqual(slots);
      expect(await result("getSignaturesForAddress", [t.mint, { limit: 2 }])).toEqual([
        {
          signature: expect.stringMatching(BASE58_SIGNATURE),
          slot: u64,
          err: expect.toSatisfy((v: unknown) => v === null || typeof v === "object" || typeof v === "string"),
          memo: expect.toSatisfy((v: unknown) => v === null || typeof v === "string"),
          blockTime: expect.toSatisfy((v: unknown) => v === null || typeof v === "number"),
          confirmationStatus: expect.stringMatching(/^(processed|confirmed|finalized)$/),
        },
        expect.any(Object),
      ]);
      const after = await rpc
        .getSignaturesForAddress(t.mint, { limit: 2, before: list[1]?.signature })
        .send();
      expect(after.map((e) => e.signature)).toEqual(list.slice(2, 4).map((e) => e.signature));
      const until = await rpc.getSignaturesForAddress(t.mint, { limit: 5, until: list[3]?.signature }).send();
      expect(until.map((e) => e.signature)).toEqual(list.slice(0, 3).map((e) => e.signature));
      const tooMany = await failure("getSignaturesForAddress", [t.mint, { limit: 1001 }]);
      expect(tooMany.code).toBe(-32602);
    });

    it("getTransaction: json with meta, base64; v0 needs maxSupportedTransactionVersion", async () => {
      const tx = await rpc
        .getTransaction(signature, { encoding: "json", maxSupportedTransactionVersion: 0 })
        .send();
      expect(tx?.transaction.signatures[0]).toBe(signature);
      const json = (await result("getTransaction", [
        signature,
        { encoding: "json", maxSupportedTransactionVersion: 0 },
      ])) as Record<string, unknown>;
      expect(json).toEqual({
        slot: u64,
        blockTime: expect.any(Number),
        version: expect.toSatisfy((v: unknown) => v === "legacy" || v === 0),
        transaction: {
          signatures: expect.arrayContaining([signature]),
          message: expect.objectContaining({
            accountKeys: expect.arrayContaining([expect.stringMatching(BASE58_ADDRESS)]),
            header: {
              numRequiredSignatures: expect.any(Number),
              numReadonlySignedAccounts: expect.any(Number),
              numReadonlyUnsignedAccounts: expect.any(Number),
            },
            instructions: expect.arrayContaining([
              expect.objectContaining({
                programIdIndex: expect.any(Number),
                accounts: expect.any(Array),
                data: expect.any(String),
              }),
            ]),
            recentBlockhash: expect.stringMatching(BASE58_ADDRESS),
          }),
        },
        meta: expect.objectContaining({
          err: null,
          status: { Ok: null },
          fee: u64,
          preBalances: expect.arrayContaining([u64]),
          postBalances: expect.arrayContaining([u64]),
          innerInstructions: expect.any(Array),
          logMessages: expect.arrayContaining([expect.any(String)]),
          preTokenBalances: expect.any(Array),
          postTokenBalances: expect.arrayContaining([tokenBalance]),
          rewards: expect.any(Array),
          loadedAddresses: { writable: expect.any(Array), readonly: expect.any(Array) },
          computeUnitsConsumed: u64,
        }),
      });
      const meta = json.meta as { preBalances: unknown[]; postBalances: unknown[] };
      const keys = (json.transaction as { message: { accountKeys: unknown[] } }).message.accountKeys;
      expect(meta.preBalances.length).toBe(meta.postBalances.length);
      expect(meta.preBalances.length).toBeGreaterThanOrEqual(keys.length);
      const base64 = (await result("getTransaction", [
        signature,
        { encoding: "base64", maxSupportedTransactionVersion: 0 },
      ])) as { transaction: unknown };
      expect(base64.transaction).toEqual([expect.any(String), "base64"]);
      expect(
        await result("getTransaction", ["1".repeat(64), { maxSupportedTransactionVersion: 0 }]),
      ).toBeNull();
      if (json.version === 0) {
        const refused = await failure("getTransaction", [signature, { encoding: "json" }]);
        expect(refused.code).toBe(-32015);
      }
    });

    it("getSignatureStatuses", async () => {
      const statuses = await rpc.getSignatureStatuses([signature, "1".repeat(64) as Signature]).send();
      expect(statuses.value[1]).toBeNull();
      expect(await result("getSignatureStatuses", [[signature], { searchTransactionHistory: true }])).toEqual(
        {
          context,
          value: [
            {
              slot: u64,
              confirmations: expect.toSatisfy((v: unknown) => v === null || typeof v === "number"),
              err: null,
              status: { Ok: null },
              confirmationStatus: expect.stringMatching(/^(processed|confirmed|finalized)$/),
            },
          ],
        },
      );
      expect(
        (await failure("getSignatureStatuses", [Array.from({ length: 257 }, () => signature)])).code,
      ).toBe(-32602);
    });

    it("getFeeForMessage and simulateTransaction (signatures unchecked, blockhash replaced)", async () => {
      const payer = await generateKeyPairSigner();
      const { value: blockhash } = await rpc.getLatestBlockhash({ commitment: "confirmed" }).send();
      const message = pipe(
        createTransactionMessage({ version: 0 }),
        (m) => setTransactionMessageFeePayerSigner(createNoopSigner(payer.address), m),
        (m) => setTransactionMessageLifetimeUsingBlockhash(blockhash, m),
        (m) =>
          appendTransactionMessageInstruction(
            getTransferSolInstruction({
              source: createNoopSigner(payer.address),
              destination: owner,
              amount: 1n,
            }),
            m,
          ),
      );
      const compiled = compileTransaction(message);
      const messageBase64 = getBase64Decoder().decode(compiled.messageBytes);
      const fee = await rpc.getFeeForMessage(messageBase64 as never, { commitment: "confirmed" }).send();
      expect(fee.value).toBe(5000n);
      expect(await result("getFeeForMessage", [messageBase64, { commitment: "confirmed" }])).toEqual({
        context,
        value: 5000,
      });
      const wire = getBase64EncodedWireTransaction(compiled);
      const simulated = await rpc
        .simulateTransaction(wire, { encoding: "base64", replaceRecentBlockhash: true, sigVerify: false })
        .send();
      // The payer has no account: the transaction cannot pay its fee.
      expect(simulated.value.err).toBe("AccountNotFound");
      expect(
        await result("simulateTransaction", [wire, { encoding: "base64", replaceRecentBlockhash: true }]),
      ).toEqual({
        context,
        value: expect.objectContaining({
          err: "AccountNotFound",
          logs: expect.any(Array),
          accounts: null,
          unitsConsumed: u64,
          replacementBlockhash: {
            blockhash: expect.stringMatching(BASE58_ADDRESS),
            lastValidBlockHeight: u64,
          },
          innerInstructions: null,
          returnData: null,
          loadedAccountsDataSize: expect.any(Number),
        }),
      });
      // Agave 3.x's simulation result always carries these keys.
      const simulatedKeys = Object.keys(
        (
          (await result("simulateTransaction", [
            wire,
            { encoding: "base64", replaceRecentBlockhash: true },
          ])) as {
            value: object;
          }
        ).value,
      );
      for (const key of [
        "fee",
        "preBalances",
        "postBalances",
        "preTokenBalances",
        "postTokenBalances",
        "loadedAddresses",
      ]) {
        expect(simulatedKeys).toContain(key);
      }
    });

    it("errors: unknown method -32601, bad params -32602, malformed body -32700, bad request -32600, batches", async () => {
      expect(await failure("getNothing", [])).toEqual({ code: -32601, message: "Method not found" });
      expect((await failure("getBalance", ["not-an-address"])).code).toBe(-32602);
      expect((await failure("getBalance", [123])).code).toBe(-32602);
      expect(
        (await failure("getAccountInfo", ["1111111111111111111111111111111111111111111111111111111111"]))
          .code,
      ).toBe(-32602);
      const malformed = await fetch(t.url, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: "{",
      });
      expect(await malformed.json()).toMatchObject({ jsonrpc: "2.0", error: { code: -32700 }, id: null });
      const invalid = await fetch(t.url, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: '{"jsonrpc":"2.0","id":1}',
      });
      expect(await invalid.json()).toMatchObject({ jsonrpc: "2.0", error: { code: -32600 } });
      const batch = await fetch(t.url, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify([
          { jsonrpc: "2.0", id: 1, method: "getHealth" },
          { jsonrpc: "2.0", id: 2, method: "getNothing" },
        ]),
      });
      expect(await batch.json()).toEqual([
        { jsonrpc: "2.0", result: "ok", id: 1 },
        { jsonrpc: "2.0", error: { code: -32601, message: "Method not found" }, id: 2 },
      ]);
    });

    it("errors as Agave words them: params, addresses, commitments, context slots, limits", async () => {
      const slot = Number(await rpc.getSlot({ commitment: "processed" }).send());
      const cases: [string, unknown, { code: number; message: string; data?: unknown }][] = [
        ["getBalance", ["not-an-address"], { code: -32602, message: "Invalid param: Invalid" }],
        [
          "getBalance",
          ["1111111111111111111111111111111111111111111111111111"],
          // Agave's words; the local chain adds the param and the bound it passed.
          {
            code: -32602,
            message: expect.stringMatching(/^Invalid param: WrongSize($| \(pubkey: at most 44 )/),
          },
        ],
        [
          "getBalance",
          [123],
          { code: -32602, message: "Invalid params: invalid type: integer `123`, expected a string." },
        ],
        ["getBalance", [], { code: -32602, message: "`params` should have at least 1 argument(s)" }],
        ["getBalance", { pubkey: t.mint }, { code: -32602, message: "`params` should be an array" }],
        [
          "getHealth",
          [1],
          {
            code: -32602,
            message: "Invalid parameters: No parameters were expected",
            data: "Array([Number(1)])",
          },
        ],
        ["isBlockhashValid", ["not-a-hash"], { code: -32602, message: "Invalid" }],
        [
          "getTokenSupply",
          [t.mint, {}],
          { code: -32602, message: "Invalid params: missing field `commitment`." },
        ],
        [
          "getSignatureStatuses",
          [[signature], {}],
          { code: -32602, message: "Invalid params: missing field `searchTransactionHistory`." },
        ],
        [
          "getSignaturesForAddress",
          [t.mint, { limit: 0 }],
          { code: -32602, message: "Invalid limit; max 1000" },
        ],
        [
          "getTransaction",
          [signature, { commitment: "processed" }],
          { code: -32602, message: "Method does not support commitment below `confirmed`" },
        ],
        [
          "getMultipleAccounts",
          [Array.from({ length: 101 }, () => t.mint)],
          { code: -32602, message: "Too many inputs provided; max 100" },
        ],
        [
          "getTokenAccountsByOwner",
          [owner, { programId: SYSTEM_PROGRAM }],
          { code: -32602, message: "Invalid param: unrecognized Token program id" },
        ],
        [
          "getAccountInfo",
          [tokenAccount],
          {
            code: -32600,
            message:
              "Encoded binary (base 58) data should be less than 128 bytes, please use Base64 encoding.",
          },
        ],
        [
          "getFeeForMessage",
          ["someInvalidMessage"],
          { code: -32602, message: "invalid base64 encoding: InvalidPadding" },
        ],
        [
          "getBalance",
          [t.mint, { minContextSlot: slot + 1_000_000 }],
          {
            code: -32016,
            message: "Minimum context slot has not been reached",
            data: { contextSlot: expect.any(Number) },
          },
        ],
      ];
      for (const [method, params, expected] of cases) {
        expect(await failure(method, params), `${method} ${JSON.stringify(params).slice(0, 80)}`).toEqual(
          expected,
        );
      }
    });

    it("HTTP as a validator serves it: a newline after the JSON, 415 for other bodies, GET /health", async () => {
      const answer = await fetch(t.url, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: '{"jsonrpc":"2.0","id":1,"method":"getHealth"}',
      });
      expect(await answer.text()).toBe('{"jsonrpc":"2.0","result":"ok","id":1}\n');
      const notification = await fetch(t.url, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: '{"jsonrpc":"2.0","method":"getHealth"}',
      });
      expect(await notification.text()).toBe("");
      const text = await fetch(t.url, {
        method: "POST",
        headers: { "content-type": "text/plain" },
        body: "{}",
      });
      expect(text.status).toBe(415);
      expect(await (await fetch(new URL("/health", t.url))).text()).toBe("ok");
    });

    it("getGenesisHash, getIdentity, getClusterNodes, getEpochSchedule, getSupply", async () => {
      const genesis = await rpc.getGenesisHash().send();
      expect(genesis).toMatch(BASE58_ADDRESS);
      expect(await result("getGenesisHash")).toBe(genesis);
      const { identity } = await rpc.getIdentity().send();
      expect(await result("getIdentity")).toEqual({ identity: expect.stringMatching(BASE58_ADDRESS) });
      const nodes = await rpc.getClusterNodes().send();
      expect(nodes.length).toBeGreaterThan(0);
      const node = (await result("getClusterNodes")) as Record<string, unknown>[];
      expect(node[0]).toMatchObject({
        pubkey: expect.stringMatching(BASE58_ADDRESS),
        version: expect.any(String),
        featureSet: expect.any(Number),
        shredVersion: expect.any(Number),
      });
      for (const key of ["gossip", "tpu", "tpuQuic", "rpc", "pubsub"]) expect(node[0]).toHaveProperty(key);
      if (t.writable) {
        expect(nodes.map((n) => n.pubkey)).toEqual([identity]);
        expect(nodes[0]?.rpc).toBe(new URL(t.url).host);
      }
      const schedule = await rpc.getEpochSchedule().send();
      expect(typeof schedule.slotsPerEpoch).toBe("bigint");
      expect(await result("getEpochSchedule")).toEqual({
        slotsPerEpoch: u64,
        leaderScheduleSlotOffset: u64,
        warmup: expect.any(Boolean),
        firstNormalEpoch: u64,
        firstNormalSlot: u64,
      });
      const supply = await rpc.getSupply({ excludeNonCirculatingAccountsList: true }).send();
      expect(supply.value.total).toBeGreaterThan(0n);
      expect(supply.value.circulating + supply.value.nonCirculating).toBe(supply.value.total);
      expect(await result("getSupply", [{ excludeNonCirculatingAccountsList: true }])).toEqual({
        context,
        value: { total: u64, circulating: u64, nonCirculating: u64, nonCirculatingAccounts: [] },
      });
    });

    it("getRecentPrioritizationFees, getFirstAvailableBlock, minimumLedgerSlot", async () => {
      const fees = await rpc.getRecentPrioritizationFees([owner]).send();
      expect(fees.length).toBeGreaterThan(0);
      expect(fees.length).toBeLessThanOrEqual(150);
      expect(typeof fees[0]?.prioritizationFee).toBe("bigint");
      const raw = (await result("getRecentPrioritizationFees", [[owner]])) as unknown[];
      expect(raw[0]).toEqual({ slot: u64, prioritizationFee: u64 });
      const tooMany = await failure("getRecentPrioritizationFees", [Array(129).fill(owner)]);
      expect(tooMany).toEqual({ code: -32602, message: "Too many inputs provided; max 128" });
      const first = await rpc.getFirstAvailableBlock().send();
      expect(typeof first).toBe("bigint");
      expect(await result("getFirstAvailableBlock")).toEqual(u64);
      expect(await rpc.minimumLedgerSlot().send()).toBeLessThanOrEqual(first + 1n);
    });

    it("getProgramAccounts with memcmp and dataSize filters, withContext; getTokenLargestAccounts", async () => {
      // The owner's token accounts of the mint: the token program's, 165 bytes, mint at 0, owner at 32.
      const filters = [
        { dataSize: 165n },
        { memcmp: { offset: 0n, bytes: t.mint as string, encoding: "base58" } },
        { memcmp: { offset: 32n, bytes: owner as string, encoding: "base58" } },
      ] as const;
      const found = await rpc
        .getProgramAccounts(TOKEN_PROGRAM, { encoding: "base64", filters: filters as never })
        .send();
      expect(found.map((a) => a.pubkey)).toContain(tokenAccount);
      const rawFilters = [
        { dataSize: 165 },
        { memcmp: { offset: 0, bytes: t.mint } },
        { memcmp: { offset: 32, bytes: owner } },
      ];
      const plain = (await result("getProgramAccounts", [
        TOKEN_PROGRAM,
        { encoding: "base64", filters: rawFilters },
      ])) as unknown[];
      expect(plain[0]).toEqual({
        pubkey: expect.stringMatching(BASE58_ADDRESS),
        account: account(expect.any(Array)),
      });
      expect(
        await result("getProgramAccounts", [
          TOKEN_PROGRAM,
          { encoding: "jsonParsed", withContext: true, filters: rawFilters },
        ]),
      ).toEqual({
        context,
        value: expect.arrayContaining([
          {
            pubkey: tokenAccount,
            account: account({
              program: "spl-token",
              parsed: { type: "account", info: expect.objectContaining({ mint: t.mint, owner }) },
              space: 165,
            }),
          },
        ]),
      });
      const sliced = await rpc
        .getProgramAccounts(TOKEN_PROGRAM, {
          encoding: "base64",
          dataSlice: { offset: 0, length: 32 },
          filters: filters as never,
          withContext: true,
        })
        .send();
      expect(typeof sliced.context.slot).toBe("bigint");
      const none = await result("getProgramAccounts", [
        TOKEN_PROGRAM,
        {
          filters: [{ dataSize: 165 }, { memcmp: { offset: 0, bytes: "11111111111111111111111111111111" } }],
        },
      ]);
      expect(none).toEqual([]);
      expect(
        await failure("getProgramAccounts", [TOKEN_PROGRAM, { filters: Array(5).fill({ dataSize: 165 }) }]),
      ).toEqual({ code: -32602, message: "Too many filters provided; max 4" });
      expect(
        await failure("getProgramAccounts", [
          TOKEN_PROGRAM,
          { filters: [{ memcmp: { offset: 0, bytes: "1".repeat(176) } }] },
        ]),
      ).toEqual({ code: -32602, message: "Invalid param: DataTooLarge" });

      const largest = await rpc.getTokenLargestAccounts(t.mint).send();
      expect(largest.value.length).toBeGreaterThan(0);
      expect(largest.value.length).toBeLessThanOrEqual(20);
      expect(typeof largest.value[0]?.amount).toBe("string");
      expect(await result("getTokenLargestAccounts", [t.mint])).toEqual({
        context,
        value: expect.arrayContaining([{ address: expect.stringMatching(BASE58_ADDRESS), ...tokenAmount }]),
      });
      const amounts = largest.value.map((a) => BigInt(a.amount));
      expect([...amounts].sort((a, b) => (a > b ? -1 : a < b ? 1 : 0))).toEqual(amounts);
    });

    it("getBlock (transactionDetails, rewards, encodings, the v0 rule), getBlocks, getBlockTime", async () => {
      const tx = await rpc
        .getTransaction(signature, { encoding: "json", maxSupportedTransactionVersion: 0 })
        .send();
      const slot = tx?.slot as bigint;
      const signatures = await rpc
        .getBlock(slot, {
          transactionDetails: "signatures",
          rewards: false,
          maxSupportedTransactionVersion: 0,
        })
        .send();
      expect(signatures?.signatures).toContain(signature);
      expect(signatures?.blockHeight).toBeTypeOf("bigint");
      const none = await result("getBlock", [
        Number(slot),
        { transactionDetails: "none", rewards: false, maxSupportedTransactionVersion: 0 },
      ]);
      expect(none).toEqual({
        blockHeight: u64,
        blockTime: u64,
        blockhash: expect.stringMatching(BASE58_ADDRESS),
        parentSlot: u64,
        previousBlockhash: expect.stringMatching(BASE58_ADDRESS),
      });
      const accounts = (await result("getBlock", [
        Number(slot),
        { transactionDetails: "accounts", maxSupportedTransactionVersion: 0 },
      ])) as {
        transactions: { transaction: unknown; meta: Record<string, unknown>; version: unknown }[];
        rewards: unknown;
      };
      expect(accounts.rewards).toEqual(expect.any(Array));
      const mine = accounts.transactions.find(
        (entry) => (entry.transaction as { signatures: string[] }).signatures[0] === signature,
      );
      expect(mine?.transaction).toEqual({
        signatures: [signature],
        accountKeys: expect.arrayContaining([
          {
            pubkey: expect.stringMatching(BASE58_ADDRESS),
            writable: true,
            signer: true,
            source: "transaction",
          },
        ]),
      });
      expect(Object.keys(mine?.meta ?? {}).sort()).toEqual(
        expect.arrayContaining(["err", "fee", "postBalances", "preBalances", "status"]),
      );
      expect(mine?.meta).not.toHaveProperty("logMessages");
      expect(mine?.version).toEqual(expect.anything());
      const time = await rpc.getBlockTime(slot).send();
      expect(time).toBe(tx?.blockTime);
      expect(await result("getBlockTime", [Number(slot)])).toBe(Number(time));
      const blocks = await rpc.getBlocks(slot, slot + 5n).send();
      expect(blocks[0]).toBe(slot);
      expect(await result("getBlocks", [Number(slot), Number(slot) + 2])).toEqual(
        expect.arrayContaining([Number(slot)]),
      );
      expect(await result("getBlocks", [Number(slot) + 10, Number(slot)])).toEqual([]);
      const processed = await failure("getBlocks", [Number(slot), { commitment: "processed" }]);
      expect(processed).toEqual({
        code: -32602,
        message: "Method does not support commitment below `confirmed`",
      });
      const future = await failure("getBlock", [Number(await rpc.getSlot().send()) + 1_000_000]);
      expect(future.code).toBe(-32004);
      expect(future.message).toMatch(/^Block not available for slot \d+$/);
      if (t.writable) {
        const full = await rpc
          .getBlock(slot, { encoding: "jsonParsed", maxSupportedTransactionVersion: 0 })
          .send();
        const parsed = full?.transactions.find((entry) => entry.transaction.signatures[0] === signature);
        expect(parsed?.transaction.message.accountKeys[0]?.signer).toBe(true);
        const json = (await result("getBlock", [Number(slot), { maxSupportedTransactionVersion: 0 }])) as {
          transactions: { transaction: { signatures: string[] }; meta: unknown; version: unknown }[];
        };
        expect(json.transactions.find((e) => e.transaction.signatures[0] === signature)).toEqual({
          transaction: await result("getTransaction", [
            signature,
            { encoding: "json", maxSupportedTransactionVersion: 0 },
          ]).then((r: { transaction: unknown }) => r.transaction),
          meta: expect.objectContaining({ err: null, fee: u64 }),
          version: expect.anything(),
        });
      }
    });

    describe.skipIf(skipReason !== undefined)("writes (local only)", () => {
      it("requestAirdrop and sendTransaction land, with statuses and history", async ({ skip }) => {
        if (!t.writable) skip();
        const payer = await generateKeyPairSigner();
        // A test cluster's RPC, which kit types with requestAirdrop.
        const local = createSolanaRpc(devnet(t.url));
        const airdrop = await local.requestAirdrop(payer.address, 2_000_000_000n as never).send();
        expect(airdrop).toMatch(BASE58_SIGNATURE);
        expect((await rpc.getBalance(payer.address).send()).value).toBe(2_000_000_000n);
        const { value: blockhash } = await rpc.getLatestBlockhash({ commitment: "confirmed" }).send();
        const signed = await pipe(
          createTransactionMessage({ version: 0 }),
          (m) => setTransactionMessageFeePayerSigner(payer, m),
          (m) => setTransactionMessageLifetimeUsingBlockhash(blockhash, m),
          (m) =>
            appendTransactionMessageInstruction(
              getTransferSolInstruction({ source: payer, destination: owner, amount: 1_000n }),
              m,
            ),
          (m) => signTransactionMessageWithSigners(m),
        );
        const sent = await rpc
          .sendTransaction(getBase64EncodedWireTransaction(signed), { encoding: "base64" })
          .send();
        // It lands in the working slot, and is confirmed once that slot is.
        const status = await confirmedStatus(sent);
        expect(status.err).toBeNull();
        const landed = await rpc
          .getTransaction(sent, { encoding: "json", maxSupportedTransactionVersion: 0 })
          .send();
        expect(landed?.meta?.fee).toBe(5000n);
        expect(landed?.meta?.preBalances[0]).toBe(2_000_000_000n);
        expect(landed?.meta?.postBalances[0]).toBe(2_000_000_000n - 5000n - 1000n);
        expect((await rpc.getSignaturesForAddress(payer.address).send()).map((e) => e.signature)).toEqual([
          sent,
          airdrop,
        ]);
        // A transaction whose signature does not verify fails preflight (Agave 3.x: no -32003).
        const forged = new Uint8Array(Buffer.from(getBase64EncodedWireTransaction(signed), "base64"));
        forged[1] = (forged[1] as number) ^ 0xff;
        const badSignature = await failure("sendTransaction", [
          Buffer.from(forged).toString("base64"),
          { encoding: "base64" },
        ]);
        expect(badSignature).toMatchObject({
          code: -32002,
          message: "Transaction simulation failed: Transaction did not pass signature verification",
          data: { err: "SignatureFailure", fee: null, logs: [], unitsConsumed: 0 },
        });
        // The same bytes again: preflight refuses them as already processed.
        const again = await failure("sendTransaction", [
          getBase64EncodedWireTransaction(signed),
          { encoding: "base64" },
        ]);
        expect(again.code).toBe(-32002);
        expect(again.message).toContain("already been processed");
      });

      it("a blockhash the chain never made is refused by preflight", async ({ skip }) => {
        if (!t.writable) skip();
        const payer = await generateKeyPairSigner();
        await createSolanaRpc(devnet(t.url))
          .requestAirdrop(payer.address, 1_000_000_000n as never)
          .send();
        const signed = await pipe(
          createTransactionMessage({ version: 0 }),
          (m) => setTransactionMessageFeePayerSigner(payer, m),
          (m) =>
            setTransactionMessageLifetimeUsingBlockhash(
              {
                blockhash: "4vJ9JU1bJJE96FWSJKvHsmmFADCg4gpZQff4P3bkLKi" as Blockhash,
                lastValidBlockHeight: 0n,
              },
              m,
            ),
          (m) =>
            appendTransactionMessageInstruction(
              getTransferSolInstruction({ source: payer, destination: owner, amount: 1n }),
              m,
            ),
          (m) => signTransactionMessageWithSigners(m),
        );
        const refused = await failure("sendTransaction", [
          getBase64EncodedWireTransaction(signed),
          { encoding: "base64" },
        ]);
        // Agave 3.x's preflight data: what a simulation would show, without accounts and balances.
        expect(refused).toEqual({
          code: -32002,
          message: "Transaction simulation failed: Blockhash not found",
          data: {
            accounts: null,
            err: "BlockhashNotFound",
            fee: null,
            innerInstructions: null,
            loadedAccountsDataSize: 0,
            loadedAddresses: null,
            logs: [],
            postBalances: null,
            postTokenBalances: null,
            preBalances: null,
            preTokenBalances: null,
            replacementBlockhash: null,
            returnData: null,
            unitsConsumed: 0,
          },
        });
      });

      it("getTokenAccountsByDelegate finds a token account by its delegate, in every encoding", async ({
        skip,
      }) => {
        if (!t.writable) skip();
        const holder = await generateKeyPairSigner();
        const delegate = await generateKeyPairSigner();
        const set = await raw("surfnet_setTokenAccount", [
          holder.address,
          t.mint,
          { amount: 5_000_000, delegate: delegate.address, delegatedAmount: 1_000_000 },
        ]);
        expect(set).not.toHaveProperty("error");
        const byDelegate = await rpc
          .getTokenAccountsByDelegate(delegate.address, { mint: t.mint }, { encoding: "jsonParsed" })
          .send();
        expect(byDelegate.value).toHaveLength(1);
        expect(byDelegate.value[0]?.account.data.parsed.info).toMatchObject({
          owner: holder.address,
          delegate: delegate.address,
          delegatedAmount: { amount: "1000000" },
        });
        expect(
          await result("getTokenAccountsByDelegate", [
            delegate.address,
            { programId: TOKEN_PROGRAM },
            { encoding: "base64" },
          ]),
        ).toEqual({
          context,
          value: [{ pubkey: byDelegate.value[0]?.pubkey, account: account([expect.any(String), "base64"]) }],
        });
        expect((await rpc.getTokenAccountsByDelegate(holder.address, { mint: t.mint }).send()).value).toEqual(
          [],
        );
        expect(
          await failure("getTokenAccountsByDelegate", [delegate.address, { mint: SYSTEM_PROGRAM }]),
        ).toEqual({
          code: -32602,
          message: "Invalid param: not a Token mint",
        });
      });

      it("surfnet_setAccount and surfnet_setTokenAccount fund a wallet with SOL and any token", async ({
        skip,
      }) => {
        if (!t.writable) skip();
        const wallet = await generateKeyPairSigner();
        expect(await result("surfnet_setAccount", [wallet.address, { lamports: 5_000_000_000 }])).toEqual({
          context,
          value: null,
        });
        expect((await rpc.getBalance(wallet.address).send()).value).toBe(5_000_000_000n);
        expect(
          await result("surfnet_setTokenAccount", [wallet.address, t.mint, { amount: 42_000_000 }]),
        ).toEqual({ context, value: null });
        const owned = await rpc
          .getTokenAccountsByOwner(wallet.address, { mint: t.mint }, { encoding: "jsonParsed" })
          .send();
        expect(owned.value).toHaveLength(1);
        const account = owned.value[0]?.pubkey as Address;
        expect((await rpc.getTokenAccountBalance(account).send()).value.amount).toBe("42000000");
        // surfpool's semantics: a delegate is set by address, kept by null, cleared by the string "null".
        const info = async () =>
          (
            (await result("getAccountInfo", [account, { encoding: "jsonParsed" }])) as {
              value: { lamports: number; data: { parsed: { info: Record<string, unknown> } } };
            }
          ).value;
        await result("surfnet_setTokenAccount", [
          wallet.address,
          t.mint,
          { delegate: owner, delegatedAmount: 5 },
        ]);
        expect((await info()).data.parsed.info).toMatchObject({
          delegate: owner,
          tokenAmount: { amount: "42000000" },
        });
        await result("surfnet_setTokenAccount", [
          wallet.address,
          t.mint,
          { delegate: null, state: "frozen" },
        ]);
        expect((await info()).data.parsed.info).toMatchObject({ delegate: owner, state: "frozen" });
        await result("surfnet_setTokenAccount", [
          wallet.address,
          t.mint,
          { delegate: "null", state: "initialized" },
        ]);
        expect((await info()).data.parsed.info).not.toHaveProperty("delegate");
        expect((await info()).lamports).toBe(2_039_280);
        expect(
          await failure("surfnet_setTokenAccount", [wallet.address, t.mint, { state: "thawed" }]),
        ).toMatchObject({
          code: -32602,
          message: "Invalid token account state thawed",
        });
        expect(await failure("surfnet_setAccount", [wallet.address, { data: "0x00" }])).toMatchObject({
          code: -32602,
          message: "Invalid hex data provided: Invalid character 'x' at position 1",
        });
        expect(await failure("surfnet_setAccount", ["not-a-key", { lamports: 1 }])).toMatchObject({
          code: -32602,
          message: "Invalid pubkey 'not-a-key'",
        });
      });
    });
  });
}

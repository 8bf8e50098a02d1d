/**
 * The local chain's account data is bounded (LOCAL_SOLANA_MAX_ACCOUNT_BYTES): LiteSVM holds
 * accounts outside V8's heap, so nothing else bounds them, and the faucet's key is public. Past
 * the bound new space is refused, whether a cheatcode or a transaction (the faucet's own
 * createAccount, a token account) asks for it; what is closed or shrunk makes room again; and the
 * service's /metrics shows the bytes held against the bound. Each test runs its own chain with a
 * bound of 2 MiB (the genesis holds some 30 KB), through real clients: kit and raw JSON-RPC.
 */
import {
  type Address,
  createKeyPairSignerFromBytes,
  generateKeyPairSigner,
  getBase64EncodedWireTransaction,
  isSolanaError,
  SOLANA_ERROR__JSON_RPC__SERVER_ERROR_SEND_TRANSACTION_PREFLIGHT_FAILURE,
  SOLANA_ERROR__TRANSACTION_ERROR__WOULD_EXCEED_ACCOUNT_DATA_TOTAL_LIMIT,
} from "@solana/kit";
import { getCreateAccountInstruction, SYSTEM_PROGRAM_ADDRESS } from "@solana-program/system";
import {
  findAssociatedTokenPda,
  getCloseAccountInstruction,
  getCreateAssociatedTokenInstructionAsync,
  TOKEN_PROGRAM_ADDRESS,
} from "@solana-program/token";
import { describe, expect, it, vi } from "vitest";
import { localKey, startLocalChain } from "../src/local-chain/index.ts";
import { loadCatalog } from "../src/token/catalog.ts";
import { createChainClient } from "./support/chain-client.ts";
import { useCleanups } from "./support/cleanups.ts";
import { startServer } from "./support/start-server.ts";

const cleanup = useCleanups();
const catalog = loadCatalog();
const USDC = catalog.tokens.find((t) => t.symbol === "USDC")?.mint as Address;
const MAX = 2 * 1024 * 1024;
const BOUND = new RegExp(`bound of ${MAX} bytes`);

async function boundedChain() {
  const local = await startLocalChain({
    catalog,
    port: 0,
    statePath: undefined,
    slotMs: 400,
    maxAccountBytes: MAX,
  });
  cleanup(() => local.close());
  const chain = createChainClient(local.url as string);
  /** surfnet_setAccount of `bytes` bytes of data (owned by System, with a lamport). */
  const setData = (address: Address, bytes: number) =>
    chain.raw("surfnet_setAccount", [address, { lamports: 1, data: "ab".repeat(bytes) }]);
  /** Fills the chain up to `room` bytes below its bound, with one account set by a cheatcode. */
  const fillTo = async (room: number): Promise<Address> => {
    const filler = (await generateKeyPairSigner()).address;
    let left = MAX - local.chain.accountBytes.used - room;
    // A request body holds at most 1 MiB: the hex of 400 KB a piece, in accounts of their own.
    let address = filler;
    while (left > 0) {
      const piece = Math.min(left, 400_000);
      expect(await setData(address, piece)).not.toHaveProperty("error");
      left -= piece;
      address = (await generateKeyPairSigner()).address;
    }
    expect(MAX - local.chain.accountBytes.used).toBe(room);
    return filler;
  };
  return { local, chain, setData, fillTo };
}

describe("the bound on the local chain's account data", () => {
  it("refuses surfnet_setAccount and surfnet_setTokenAccount past it, naming the bound, and writes nothing", async () => {
    const { local, chain, setData } = await boundedChain();
    // 3,000 accounts of 100 KB took the service from 298 MB to 595 MB: here the 6th of 400 KB is refused.
    const written: Address[] = [];
    let refused: Record<string, unknown> | undefined;
    for (let i = 0; i < 20 && refused === undefined; i++) {
      const address = (await generateKeyPairSigner()).address;
      const answer = await setData(address, 400_000);
      if ("error" in answer) {
        refused = answer.error as Record<string, unknown>;
        expect((await chain.rpc.getAccountInfo(address, { encoding: "base64" }).send()).value).toBeNull();
      } else written.push(address);
    }
    // The genesis holds some 30 KB: five fit in the 2 MiB, the sixth does not.
    expect(written).toHaveLength(5);
    expect(refused).toMatchObject({ code: -32602, message: expect.stringMatching(BOUND) });
    expect(local.chain.accountBytes.used).toBeLessThanOrEqual(MAX);

    // What is left fits, to the byte; then not even a token account does.
    const room = MAX - local.chain.accountBytes.used;
    expect(await setData((await generateKeyPairSigner()).address, room)).not.toHaveProperty("error");
    const owner = (await generateKeyPairSigner()).address;
    const token = await chain.raw("surfnet_setTokenAccount", [owner, USDC, { amount: 1 }]);
    expect(token.error).toMatchObject({ code: -32602, message: expect.stringMatching(BOUND) });
    const [ata] = await findAssociatedTokenPda({ owner, mint: USDC, tokenProgram: TOKEN_PROGRAM_ADDRESS });
    expect((await chain.rpc.getAccountInfo(ata, { encoding: "base64" }).send()).value).toBeNull();
    expect(local.chain.accountBytes.used).toBe(MAX);
  });

  it("refuses a large createAccount signed with the public faucet key, with or without preflight: nothing is created and no fee is paid", async () => {
    const { local, chain } = await boundedChain();
    const faucet = await createKeyPairSignerFromBytes(localKey("faucet").keypairBytes);
    const createAccount = async (space: number) => {
      const created = await generateKeyPairSigner();
      const rent = await chain.rpc.getMinimumBalanceForRentExemption(BigInt(space)).send();
      return {
        created,
        instruction: getCreateAccountInstruction({
          payer: faucet,
          newAccount: created,
          lamports: rent,
          space,
          programAddress: SYSTEM_PROGRAM_ADDRESS,
        }),
      };
    };
    // 1 MiB fits; a second does not.
    const first = await createAccount(1024 * 1024);
    await chain.sendAndConfirm(faucet, [first.instruction]);
    expect(
      (await chain.rpc.getAccountInfo(first.created.address, { encoding: "base64" }).send()).value?.space,
    ).toBe(1024n * 1024n);

    const second = await createAccount(1024 * 1024);
    const balance = (await chain.rpc.getBalance(faucet.address).send()).value;
    const sent = await chain.send(faucet, [second.instruction]).then(
      () => undefined,
      (error: unknown) => error,
    );
    // As kit reads a preflight failure: Solana's own error for it, with the bound in the message.
    expect(isSolanaError(sent, SOLANA_ERROR__JSON_RPC__SERVER_ERROR_SEND_TRANSACTION_PREFLIGHT_FAILURE)).toBe(
      true,
    );
    expect(
      isSolanaError(
        (sent as Error).cause,
        SOLANA_ERROR__TRANSACTION_ERROR__WOULD_EXCEED_ACCOUNT_DATA_TOTAL_LIMIT,
      ),
    ).toBe(true);
    const transaction = await chain.sign(faucet, [second.instruction]);
    const wire = getBase64EncodedWireTransaction(transaction);
    for (const skipPreflight of [false, true]) {
      const answer = await chain.raw("sendTransaction", [wire, { encoding: "base64", skipPreflight }]);
      expect(answer.error, `skipPreflight ${skipPreflight}`).toMatchObject({
        code: -32002,
        message: expect.stringMatching(BOUND),
        data: { err: "WouldExceedAccountDataTotalLimit" },
      });
    }
    expect(
      (await chain.rpc.getAccountInfo(second.created.address, { encoding: "base64" }).send()).value,
    ).toBeNull();
    expect((await chain.rpc.getBalance(faucet.address).send()).value).toBe(balance);
    // Its simulation says the same (a preflight is one).
    const simulated = await chain.raw("simulateTransaction", [wire, { encoding: "base64" }]);
    expect(simulated.result).toMatchObject({ value: { err: "WouldExceedAccountDataTotalLimit" } });
    expect(local.chain.accountBytes.used).toBeLessThanOrEqual(MAX);
  });

  it("makes room again for what is closed or shrunk: a token account closed by its owner lets the next be created", async () => {
    const { local, chain, setData, fillTo } = await boundedChain();
    const owner = await generateKeyPairSigner();
    await chain.airdrop(owner.address, 10n);
    const createAta = (forOwner: Address) =>
      getCreateAssociatedTokenInstructionAsync({ payer: owner, owner: forOwner, mint: USDC });
    await chain.sendAndConfirm(owner, [await createAta(owner.address)]);
    const [own] = await findAssociatedTokenPda({
      owner: owner.address,
      mint: USDC,
      tokenProgram: TOKEN_PROGRAM_ADDRESS,
    });

    // Less room than a token account (165 bytes): creating one is refused, and nothing lands.
    const filler = await fillTo(100);
    const other = (await generateKeyPairSigner()).address;
    const [otherAta] = await findAssociatedTokenPda({
      owner: other,
      mint: USDC,
      tokenProgram: TOKEN_PROGRAM_ADDRESS,
    });
    await expect(chain.send(owner, [await createAta(other)])).rejects.toSatisfy((error) =>
      isSolanaError(error, SOLANA_ERROR__JSON_RPC__SERVER_ERROR_SEND_TRANSACTION_PREFLIGHT_FAILURE),
    );
    expect((await chain.rpc.getAccountInfo(otherAta, { encoding: "base64" }).send()).value).toBeNull();

    // Its owner closes its own token account: 165 bytes free, and the other's is created.
    await chain.sendAndConfirm(owner, [
      getCloseAccountInstruction({ account: own, destination: owner.address, owner }),
    ]);
    expect(MAX - local.chain.accountBytes.used).toBe(265);
    await chain.sendAndConfirm(owner, [await createAta(other)]);
    expect((await chain.rpc.getAccountInfo(otherAta, { encoding: "base64" }).send()).value).not.toBeNull();
    expect(MAX - local.chain.accountBytes.used).toBe(100);

    // A cheatcode that shrinks an account frees its bytes too.
    expect(await setData(filler, 0)).not.toHaveProperty("error");
    expect(MAX - local.chain.accountBytes.used).toBe(400_100);
    expect(await setData((await generateKeyPairSigner()).address, 400_000)).not.toHaveProperty("error");
  });

  it("is LOCAL_SOLANA_MAX_ACCOUNT_BYTES, and the service's /metrics shows the bytes held against it", async () => {
    const server = await startServer({ env: { LOCAL_SOLANA_MAX_ACCOUNT_BYTES: String(32 * 1024 * 1024) } });
    cleanup(() => server.close());
    const chain = createChainClient(server.localChain?.url as string);
    const gauge = async (name: string) => {
      const text = await (await fetch(`${server.baseUrl}/metrics`)).text();
      const line = text.split("\n").find((l) => l.startsWith(`${name} `));
      return line === undefined ? undefined : Number(line.split(" ")[1]);
    };
    // The genesis' accounts (some 30 KB), from the start.
    await vi.waitFor(async () => expect(await gauge("local_chain_account_data_bytes")).toBeGreaterThan(0));
    expect(await gauge("local_chain_account_data_bytes")).toBeLessThan(256 * 1024);
    expect(await gauge("local_chain_account_data_max_bytes")).toBe(32 * 1024 * 1024);
    const before = (await gauge("local_chain_account_data_bytes")) as number;
    const address = (await generateKeyPairSigner()).address;
    expect(
      await chain.raw("surfnet_setAccount", [address, { lamports: 1, data: "00".repeat(300_000) }]),
    ).not.toHaveProperty("error");
    await vi.waitFor(
      async () => expect(await gauge("local_chain_account_data_bytes")).toBe(before + 300_000),
      {
        timeout: 5000,
      },
    );
  });
});

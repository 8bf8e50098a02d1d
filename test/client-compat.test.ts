/**
 * Solana's mainstream clients run their own default flows against the embedded chain, unchanged:
 * each finds the PubSub port the way it does on a cluster (kit is given its ws:// URL, web3.js
 * derives it as the RPC port + 1) and confirms through its own subscriptions. Nothing here polls
 * the chain: a flow that waits for a notification that never comes times out and fails.
 */

import {
  type Address,
  airdropFactory,
  createSolanaRpc,
  createSolanaRpcSubscriptions,
  generateKeyPairSigner,
  getSignatureFromTransaction,
  type KeyPairSigner,
  lamports,
  sendAndConfirmTransactionFactory,
} from "@solana/kit";
import {
  Connection,
  Keypair,
  LAMPORTS_PER_SOL,
  type PublicKey,
  SystemProgram,
  Transaction,
  sendAndConfirmTransaction as web3SendAndConfirm,
} from "@solana/web3.js";
import { getTransferSolInstruction } from "@solana-program/system";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { type RunningLocalChain, startLocalChain } from "../src/local-chain/index.ts";
import { loadCatalog } from "../src/token/catalog.ts";
import { signedTransaction } from "./support/chain-client.ts";

/** Short slots, so that finality (32 slots) comes within two seconds. */
const SLOT_MS = 50;
let local: RunningLocalChain;

beforeAll(async () => {
  local = await startLocalChain({ catalog: loadCatalog(), port: 0, statePath: undefined, slotMs: SLOT_MS });
});
afterAll(async () => {
  // web3.js's confirmTransaction leaves its block-height check running for up to a second after
  // it resolves (it sleeps 1 s between checks), and does not catch it: closing the port under it
  // would be an unhandled rejection of web3.js's, not a failure of the chain.
  await new Promise((resolve) => setTimeout(resolve, 1500));
  await local?.close();
});

describe("@solana/kit 8", () => {
  const clients = () => {
    const rpc = createSolanaRpc(local.url as string);
    const rpcSubscriptions = createSolanaRpcSubscriptions(local.pubsub?.url as string);
    return { rpc, rpcSubscriptions };
  };
  let payer: KeyPairSigner;
  beforeAll(async () => {
    payer = await generateKeyPairSigner();
    await airdropFactory(clients())({
      commitment: "confirmed",
      recipientAddress: payer.address,
      lamports: lamports(BigInt(LAMPORTS_PER_SOL)),
    });
  });

  const transfer = async (to: Address, amount: bigint) => {
    const { rpc } = clients();
    const { value: blockhash } = await rpc.getLatestBlockhash({ commitment: "confirmed" }).send();
    return signedTransaction(payer, blockhash, [
      getTransferSolInstruction({ source: payer, destination: to, amount }),
    ]);
  };

  it("airdropFactory confirms an airdrop through signatureNotifications", async () => {
    const recipient = await generateKeyPairSigner();
    const airdrop = airdropFactory(clients());
    const signature = await airdrop({
      commitment: "confirmed",
      recipientAddress: recipient.address,
      lamports: lamports(2n * BigInt(LAMPORTS_PER_SOL)),
    });
    expect(typeof signature).toBe("string");
    const { value } = await clients().rpc.getBalance(recipient.address, { commitment: "confirmed" }).send();
    expect(value).toBe(2n * BigInt(LAMPORTS_PER_SOL));
  });

  it.each(["confirmed", "finalized"] as const)(
    "sendAndConfirmTransactionFactory confirms a transfer (%s)",
    async (commitment) => {
      const to = await generateKeyPairSigner();
      const signed = await transfer(to.address, 1_000_000n);
      const sendAndConfirm = sendAndConfirmTransactionFactory(clients());
      await sendAndConfirm(signed as Parameters<typeof sendAndConfirm>[0], { commitment });
      const { value } = await clients()
        .rpc.getSignatureStatuses([getSignatureFromTransaction(signed)])
        .send();
      expect(value[0]?.confirmationStatus).toBe(commitment);
    },
  );

  it("accountNotifications tells of an account's change, and logsNotifications of a transaction's logs", async () => {
    const to = await generateKeyPairSigner();
    const { rpcSubscriptions } = clients();
    const abort = new AbortController();
    try {
      const accounts = await rpcSubscriptions
        .accountNotifications(to.address, { commitment: "confirmed", encoding: "base64" })
        .subscribe({ abortSignal: abort.signal });
      const logs = await rpcSubscriptions
        .logsNotifications({ mentions: [to.address] }, { commitment: "confirmed" })
        .subscribe({ abortSignal: abort.signal });
      // kit drops what arrives before an iterator polls: poll first, then send.
      const nextAccount = accounts[Symbol.asyncIterator]().next();
      const nextLog = logs[Symbol.asyncIterator]().next();
      const signed = await transfer(to.address, 3_000_000n);
      const sendAndConfirm = sendAndConfirmTransactionFactory(clients());
      await sendAndConfirm(signed as Parameters<typeof sendAndConfirm>[0], { commitment: "confirmed" });

      const account = (await nextAccount).value;
      expect(account.value.lamports).toBe(3_000_000n);
      expect(account.value.owner).toBe("11111111111111111111111111111111");
      expect(account.value.data).toEqual(["", "base64"]);
      expect(account.context.slot).toBeTypeOf("bigint");

      const log = (await nextLog).value;
      expect(log.value.signature).toBe(getSignatureFromTransaction(signed));
      expect(log.value.err).toBeNull();
      expect(log.value.logs).toContain("Program 11111111111111111111111111111111 success");
    } finally {
      abort.abort();
    }
  });
});

/** Subscriptions the chain holds now. */
const subscriptions = () => local.pubsub?.stats().subscriptions ?? 0;

/**
 * Resolves once the chain holds `count` subscriptions: web3.js subscribes when its socket opens,
 * and has no promise for it; a transaction sent before would go unseen. (Only the test's setup
 * waits so; the clients' own flows are never helped along.)
 */
const subscribed = (count: number) =>
  vi.waitFor(() => expect(subscriptions()).toBeGreaterThanOrEqual(count), { timeout: 10_000, interval: 20 });

describe("@solana/web3.js 1.x", () => {
  /** Airdropped to, and confirmed, the way web3.js does it. */
  const funded = async (connection: Connection, amount: number) => {
    const keypair = Keypair.generate();
    const signature = await connection.requestAirdrop(keypair.publicKey, amount);
    const latest = await connection.getLatestBlockhash();
    const result = await connection.confirmTransaction({ signature, ...latest }, "confirmed");
    return { keypair, result };
  };
  let payer: Keypair;
  beforeAll(async () => {
    payer = (await funded(new Connection(local.url as string, "confirmed"), LAMPORTS_PER_SOL)).keypair;
  });

  it("requestAirdrop + confirmTransaction confirms through its signature subscription", async () => {
    const connection = new Connection(local.url as string, "confirmed");
    const { keypair, result } = await funded(connection, 2 * LAMPORTS_PER_SOL);
    expect(result.value.err).toBeNull();
    expect(await connection.getBalance(keypair.publicKey)).toBe(2 * LAMPORTS_PER_SOL);
  });

  it("sendAndConfirmTransaction confirms a transfer with a Connection's defaults", async () => {
    const connection = new Connection(local.url as string);
    const to = Keypair.generate().publicKey;
    const tx = new Transaction().add(
      SystemProgram.transfer({ fromPubkey: payer.publicKey, toPubkey: to, lamports: 1_000_000 }),
    );
    const signature = await web3SendAndConfirm(connection, tx, [payer]);
    const status = await connection.getSignatureStatus(signature);
    expect(status.value?.err).toBeNull();
    expect(await connection.getBalance(to, "confirmed")).toBe(1_000_000);
  });

  it("onAccountChange tells of an account's change", async () => {
    const before = subscriptions();
    const connection = new Connection(local.url as string, "confirmed");
    const to = Keypair.generate().publicKey;
    const changed = new Promise<{ lamports: number; owner: PublicKey; slot: number }>((resolve) => {
      const id = connection.onAccountChange(
        to,
        (info, context) => {
          void connection.removeAccountChangeListener(id);
          resolve({ lamports: info.lamports, owner: info.owner, slot: context.slot });
        },
        { commitment: "confirmed" },
      );
    });
    await subscribed(before + 1);
    const tx = new Transaction().add(
      SystemProgram.transfer({ fromPubkey: payer.publicKey, toPubkey: to, lamports: 5_000_000 }),
    );
    await web3SendAndConfirm(connection, tx, [payer], { commitment: "confirmed" });
    const seen = await changed;
    expect(seen.lamports).toBe(5_000_000);
    expect(seen.owner.toBase58()).toBe(SystemProgram.programId.toBase58());
    expect(seen.slot).toBeGreaterThan(0);
  });

  it("onProgramAccountChange, onLogs, onSlotChange and onRootChange parse what the chain sends", async () => {
    // web3.js checks every notification against its own schema: a shape it does not expect is
    // dropped with an error, and the callback below would never run.
    // A signature subscription of the tests before ends once its transaction's slot is confirmed
    // (the next slot): let it end, or it would be counted below and then go.
    await vi.waitFor(() => expect(subscriptions()).toBe(0), { timeout: 10_000, interval: 20 });
    const before = subscriptions();
    const connection = new Connection(local.url as string, "confirmed");
    const to = Keypair.generate().publicKey;
    const program = new Promise<{ pubkey: string; lamports: number }>((resolve) => {
      const id = connection.onProgramAccountChange(
        SystemProgram.programId,
        (keyed) => {
          if (!keyed.accountId.equals(to)) return;
          void connection.removeProgramAccountChangeListener(id);
          resolve({ pubkey: keyed.accountId.toBase58(), lamports: keyed.accountInfo.lamports });
        },
        { commitment: "confirmed", encoding: "base64", filters: [{ dataSize: 0 }] },
      );
    });
    const logs = new Promise<{ signature: string; logs: string[] }>((resolve) => {
      const id = connection.onLogs(
        to,
        (found) => {
          void connection.removeOnLogsListener(id);
          resolve(found);
        },
        "confirmed",
      );
    });
    const slot = new Promise<{ parent: number; slot: number; root: number }>((resolve) => {
      const id = connection.onSlotChange((info) => {
        void connection.removeSlotChangeListener(id);
        resolve(info);
      });
    });
    const root = new Promise<number>((resolve) => {
      const id = connection.onRootChange((at) => {
        void connection.removeRootChangeListener(id);
        resolve(at);
      });
    });
    await subscribed(before + 4);
    const tx = new Transaction().add(
      SystemProgram.transfer({ fromPubkey: payer.publicKey, toPubkey: to, lamports: 7_000_000 }),
    );
    const signature = await web3SendAndConfirm(connection, tx, [payer], { commitment: "confirmed" });
    expect(await program).toEqual({ pubkey: to.toBase58(), lamports: 7_000_000 });
    expect(await logs).toMatchObject({ signature, err: null });
    const info = await slot;
    expect(info.parent).toBe(info.slot - 1);
    expect(info.root).toBeLessThan(info.slot);
    expect(await root).toBeGreaterThan(0);
  });
});

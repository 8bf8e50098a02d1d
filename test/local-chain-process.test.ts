/**
 * The local chain as its own process (`npm run local-chain`), shared by service replicas through
 * SOLANA_RPC_URL, kept across restarts by LOCAL_SOLANA_STATE, and reachable on 127.0.0.1 only.
 */
import { chmodSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { networkInterfaces, tmpdir } from "node:os";
import { join } from "node:path";
import { address, generateKeyPairSigner, type Signature } from "@solana/kit";
import { findAssociatedTokenPda, getTransferCheckedInstruction } from "@solana-program/token";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { loadCatalog } from "../src/token/catalog.ts";
import { createChainClient } from "./support/chain-client.ts";
import { writeDelegateSeed, writeExecutorKeypair } from "./support/executor-keypair.ts";
import { LOCAL_CHAIN_MAIN, type MainProcess, spawnMain, startMain } from "./support/main-process.ts";
import { onFreePortPair } from "./support/ports.ts";

const USDC = address(loadCatalog().tokens.find((t) => t.symbol === "USDC")?.mint as string);
const directory = mkdtempSync(join(tmpdir(), "local-chain-"));
const statePath = join(directory, "chain.bin");
const keypairPath = join(directory, "executor.json");
const executor = writeExecutorKeypair(keypairPath);
const seedPath = join(directory, "delegate.seed");
writeDelegateSeed(seedPath);
const running: MainProcess[] = [];
let port: number;
let chainProcess: MainProcess;

/** The chain on a free pair of ports (`port` says which), from LOCAL_SOLANA_STATE when it exists. */
function startChain(): Promise<MainProcess> {
  return onFreePortPair(async (free) => {
    port = free;
    const chain = spawnMain(
      { LOCAL_SOLANA_RPC_PORT: String(port), LOCAL_SOLANA_STATE: statePath, LOG_LEVEL: "info" },
      LOCAL_CHAIN_MAIN,
    );
    running.push(chain);
    await chain.waitForLog(
      (line) => line.msg === `local chain serving Solana JSON-RPC at http://127.0.0.1:${port}`,
      30_000,
    );
    return chain;
  });
}

async function stop(process: MainProcess): Promise<void> {
  process.child.kill("SIGTERM");
  expect((await process.exited).code).toBe(0);
}

beforeAll(async () => {
  chainProcess = await startChain();
});

afterAll(() => {
  for (const p of running) p.kill();
  rmSync(directory, { recursive: true, force: true });
});

describe("the local chain alone", () => {
  let transfer: Signature;

  it("serves two service replicas through SOLANA_RPC_URL: a transfer made on it shows on both", async () => {
    const chain = createChainClient(`http://127.0.0.1:${port}`);
    const [alice, bob] = await Promise.all([generateKeyPairSigner(), generateKeyPairSigner()]);
    await chain.airdrop(alice.address, 1n);
    await chain.setTokenBalance(alice.address, USDC, 5_000_000n);
    await chain.setTokenBalance(bob.address, USDC, 0n);
    const [source] = await findAssociatedTokenPda({
      owner: alice.address,
      mint: USDC,
      tokenProgram: address("TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA"),
    });
    const [destination] = await findAssociatedTokenPda({
      owner: bob.address,
      mint: USDC,
      tokenProgram: address("TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA"),
    });
    transfer = await chain.sendAndConfirm(alice, [
      getTransferCheckedInstruction({
        source,
        mint: USDC,
        destination,
        authority: alice,
        amount: 2_500_000n,
        decimals: 6,
      }),
    ]);
    const replicas = await Promise.all(
      [1, 2].map(() =>
        startMain({
          SOLANA_RPC_URL: `http://127.0.0.1:${port}`,
          EXECUTOR_KEYPAIR: keypairPath,
          DELEGATE_SEED: seedPath,
          ALLOW_ANONYMOUS_TRANSFERS: "true",
        }),
      ),
    );
    running.push(...replicas);
    for (const replica of replicas) {
      // Both sign as the one executor of the key file, and say which without showing the key.
      const executorAnswer = await fetch(`http://127.0.0.1:${replica.port}/v1/executor`);
      expect(await executorAnswer.json()).toMatchObject({ success: true, data: { address: executor } });
      expect(replica.stdout()).not.toContain(readFileSync(keypairPath, "utf8"));
      const response = await fetch(`http://127.0.0.1:${replica.port}/v1/tokens/${USDC}/transactions?limit=1`);
      expect(await response.json()).toMatchObject({
        success: true,
        data: [
          {
            signature: transfer,
            amount: 2.5,
            sender: alice.address,
            recipient: bob.address,
            type: "transfer",
          },
        ],
      });
      expect(
        replica
          .logLines()
          .some((l) => l.msg === "token data comes from the Solana cluster at SOLANA_RPC_URL"),
      ).toBe(true);
    }
    await Promise.all(replicas.map(stop));
  });

  it("keeps its state across a restart (LOCAL_SOLANA_STATE): the transfer, balances and the slot", async () => {
    const slotBefore = await createChainClient(`http://127.0.0.1:${port}`)
      .rpc.getSlot({ commitment: "confirmed" })
      .send();
    await stop(chainProcess);
    // On a free pair again (maybe another): the state is what this is about.
    chainProcess = await startChain();
    const chain = createChainClient(`http://127.0.0.1:${port}`);
    expect(chainProcess.logLines().some((l) => l.msg === "local chain state loaded")).toBe(true);
    const found = await chain.rpc
      .getTransaction(transfer, { encoding: "json", maxSupportedTransactionVersion: 0 })
      .send();
    expect(found?.transaction.signatures[0]).toBe(transfer);
    expect(await chain.rpc.getSlot({ commitment: "confirmed" }).send()).toBeGreaterThanOrEqual(slotBefore);
    const history = await chain.rpc.getSignaturesForAddress(USDC, { limit: 1 }).send();
    expect(history[0]?.signature).toBe(transfer);
  });

  it("listens on 127.0.0.1 only", async () => {
    const outside = Object.values(networkInterfaces())
      .flat()
      .find((i) => i !== undefined && i.family === "IPv4" && !i.internal)?.address;
    if (outside === undefined) {
      console.log("no non-loopback IPv4 interface on this machine: only the loopback check runs");
    } else {
      await expect(fetch(`http://${outside}:${port}/health`)).rejects.toThrow();
    }
    expect(await (await fetch(`http://127.0.0.1:${port}/health`)).text()).toBe("ok");
  });

  it("a service on a cluster refuses to start without its secrets, with one others can read, or without API keys", async () => {
    const url = `http://127.0.0.1:${port}`;
    const none = spawnMain({ PORT: "0", HOST: "127.0.0.1", SOLANA_RPC_URL: url });
    running.push(none);
    expect((await none.exited).code).toBe(2);
    expect(none.stderr()).toMatch(/EXECUTOR_KEYPAIR is required when SOLANA_RPC_URL is set/);
    const shared = join(directory, "shared.json");
    writeExecutorKeypair(shared);
    chmodSync(shared, 0o644);
    const readable = spawnMain({
      PORT: "0",
      HOST: "127.0.0.1",
      SOLANA_RPC_URL: url,
      EXECUTOR_KEYPAIR: shared,
      DELEGATE_SEED: seedPath,
      ALLOW_ANONYMOUS_TRANSFERS: "true",
    });
    running.push(readable);
    expect((await readable.exited).code).toBe(2);
    expect(readable.stderr()).toMatch(
      /EXECUTOR_KEYPAIR names a file readable by group or others \(mode 644\)/,
    );
    expect(readable.stderr()).not.toContain(readFileSync(shared, "utf8"));
    const openSeed = join(directory, "open.seed");
    writeDelegateSeed(openSeed);
    chmodSync(openSeed, 0o644);
    const seedReadable = spawnMain({
      PORT: "0",
      HOST: "127.0.0.1",
      SOLANA_RPC_URL: url,
      EXECUTOR_KEYPAIR: keypairPath,
      DELEGATE_SEED: openSeed,
      ALLOW_ANONYMOUS_TRANSFERS: "true",
    });
    running.push(seedReadable);
    expect((await seedReadable.exited).code).toBe(2);
    expect(seedReadable.stderr()).toMatch(
      /DELEGATE_SEED names a file readable by group or others \(mode 644\)/,
    );
    // Without keys every caller is one owner, who could spend every approval made to it.
    const anonymous = spawnMain({
      PORT: "0",
      HOST: "127.0.0.1",
      SOLANA_RPC_URL: url,
      EXECUTOR_KEYPAIR: keypairPath,
      DELEGATE_SEED: seedPath,
      AUTH_MODE: "none",
    });
    running.push(anonymous);
    expect((await anonymous.exited).code).toBe(2);
    expect(anonymous.stderr()).toMatch(/AUTH_MODE=none with SOLANA_RPC_URL.*ALLOW_ANONYMOUS_TRANSFERS=true/);
  });

  it("serves PubSub on the RPC port + 1, alone and inside the service", async () => {
    const service = spawnMain({ PORT: "0", HOST: "127.0.0.1" });
    running.push(service);
    const ready = await service.waitForLog((line) => typeof line.solana_pubsub === "string", 30_000);
    const rpcPort = Number(new URL(ready.solana_rpc as string).port);
    expect(ready.solana_pubsub).toBe(`ws://127.0.0.1:${rpcPort + 1}`);
    for (const url of [`ws://127.0.0.1:${port + 1}`, ready.solana_pubsub as string]) {
      const ws = new WebSocket(url);
      const messages: Record<string, unknown>[] = [];
      const slot = new Promise<Record<string, unknown>>((resolve) =>
        ws.on("message", (data) => {
          const message = JSON.parse(String(data)) as Record<string, unknown>;
          messages.push(message);
          if (message.method === "slotNotification") resolve(message);
        }),
      );
      await new Promise((resolve) => ws.once("open", resolve));
      ws.send(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "slotSubscribe" }));
      // The chain produces its slots on its own while anything is subscribed.
      expect(await slot, url).toMatchObject({ params: { result: { slot: expect.any(Number) } } });
      expect(messages[0]).toMatchObject({ id: 1, result: expect.any(Number) });
      ws.close();
    }
    service.child.kill("SIGTERM");
    expect((await service.exited).code).toBe(0);
  });

  it("a service whose local chain port is taken says so and exits", async () => {
    const service = spawnMain({ PORT: "0", HOST: "127.0.0.1", LOCAL_SOLANA_RPC_PORT: String(port) });
    running.push(service);
    const exit = await service.exited;
    expect(exit.code).toBe(1);
    const fatal = service.logLines().find((l) => l.level === 60);
    expect(fatal?.msg).toContain(`LOCAL_SOLANA_RPC_PORT ${port} is in use`);
    expect(fatal?.msg).toContain("SOLANA_RPC_URL");
  });
});

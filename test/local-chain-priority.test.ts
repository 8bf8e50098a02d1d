/**
 * The service's own chain calls go ahead of the public port's clients in the chain's worker: while
 * 32 connections each hold a batch of 100 scans on the port, each of the service's calls (over the
 * worker's message port) waits for at most the scan that runs, not for one scan of every batch.
 * Shown by order, not by time: a cheap public request sent with the service's first call answers
 * after five of the service's calls, one after another, are done. When every batch ran a scan
 * between two looks at the service's messages, the public request (read in two looks) answered
 * before the fifth.
 */
import { randomBytes } from "node:crypto";
import * as http from "node:http";
import { Worker } from "node:worker_threads";
import { type Address, createSolanaRpcFromTransport, getBase58Decoder } from "@solana/kit";
import { TOKEN_PROGRAM_ADDRESS } from "@solana-program/token";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { type EmbeddedLocalChain, startLocalChainWorker } from "../src/local-chain/index.ts";
import { loadCatalog } from "../src/token/catalog.ts";

const USDC = loadCatalog().tokens.find((t) => t.symbol === "USDC")?.mint as Address;
const CONNECTIONS = 32;
const BATCH = 100;
/** Token accounts on the chain: each scan of the flood reads them all. */
const ACCOUNTS = 1000;
/** The service's calls made one after another while the public probe waits. */
const OWN_CALLS = 5;

function randomAddress(): string {
  return getBase58Decoder().decode(randomBytes(32));
}

async function post(url: string, body: unknown): Promise<unknown> {
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return response.json();
}

/** POSTs on one connection kept open between them. */
function keptAlive(url: string): { post(body: unknown): Promise<unknown>; close(): void } {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  return {
    post: (body) =>
      new Promise((resolve, reject) => {
        const req = http.request(
          url,
          { method: "POST", agent, headers: { "content-type": "application/json" } },
          (res) => {
            const chunks: Buffer[] = [];
            res.on("data", (chunk: Buffer) => chunks.push(chunk));
            res.on("end", () => resolve(JSON.parse(Buffer.concat(chunks).toString("utf8"))));
          },
        );
        req.on("error", reject);
        req.end(JSON.stringify(body));
      }),
    close: () => agent.destroy(),
  };
}

/**
 * `connections` connections to the chain's port, each sending one batch, from another thread (as
 * other processes would: reading their answers is not the test's thread's work). `sent` resolves
 * once every request is written out, `done` once every answer is read.
 */
function flood(
  url: string,
  connections: number,
  body: unknown,
): { sent: Promise<void>; done: Promise<void>; stop(): Promise<number> } {
  const client = new Worker(
    `const http = require("node:http");
     const { parentPort, workerData } = require("node:worker_threads");
     const agent = new http.Agent({ keepAlive: false, maxSockets: workerData.connections });
     let written = 0;
     let answered = 0;
     for (let i = 0; i < workerData.connections; i++) {
       const req = http.request(workerData.url, { method: "POST", agent, headers: { "content-type": "application/json" } }, (res) => {
         res.resume();
         res.on("end", () => { if (++answered === workerData.connections) parentPort.postMessage("done"); });
       });
       req.on("error", (error) => parentPort.postMessage({ error: String(error) }));
       req.end(workerData.body, () => { if (++written === workerData.connections) parentPort.postMessage("sent"); });
     }`,
    { eval: true, workerData: { url, connections, body: JSON.stringify(body) } },
  );
  let sent: () => void = () => {};
  let done: () => void = () => {};
  let failed: (error: Error) => void = () => {};
  const sentPromise = new Promise<void>((resolve) => {
    sent = resolve;
  });
  const donePromise = new Promise<void>((resolve, reject) => {
    done = resolve;
    failed = reject;
  });
  client.on("message", (message: string | { error: string }) => {
    if (message === "sent") sent();
    else if (message === "done") {
      done();
      void client.terminate();
    } else if (typeof message === "object") failed(new Error(message.error));
  });
  client.once("error", failed);
  return { sent: sentPromise, done: donePromise, stop: () => client.terminate() };
}

describe("the service's own chain calls under a flood of the public port", () => {
  let chain: EmbeddedLocalChain;
  /** Scans the chain has answered (its counts reach this thread every 250 ms). */
  let scanned = 0;

  beforeAll(async () => {
    chain = await startLocalChainWorker({
      port: 0,
      statePath: undefined,
      slotMs: 400,
      timeoutMs: 30_000,
      // No batch is cut short by its time (LOCAL_SOLANA_MAX_REQUEST_MS): the flood lasts.
      limits: { maxRequestMs: 600_000 },
      log: () => {},
      onRequest: (method) => {
        if (method === "getProgramAccounts") scanned++;
      },
    });
    const url = chain.url as string;
    for (let done = 0; done < ACCOUNTS; done += 100) {
      const batch = Array.from({ length: 100 }, (_, i) => ({
        jsonrpc: "2.0",
        id: i,
        method: "surfnet_setTokenAccount",
        params: [randomAddress(), USDC, { amount: 1 + done + i }],
      }));
      const answers = (await post(url, batch)) as { error?: unknown }[];
      expect(answers.filter((a) => a.error !== undefined)).toEqual([]);
    }
  }, 120_000);
  afterAll(() => chain?.close());

  it(`are answered ahead of ${CONNECTIONS} batches of ${BATCH} scans, one after another, before a public request sent with them`, async () => {
    const url = chain.url as string;
    const rpc = createSolanaRpcFromTransport(chain.transport);
    // Every token account, its data left out: the scan is the chain's work, the answer small.
    const scans = Array.from({ length: BATCH }, (_, id) => ({
      jsonrpc: "2.0",
      id,
      method: "getProgramAccounts",
      params: [TOKEN_PROGRAM_ADDRESS, { encoding: "base64", dataSlice: { offset: 0, length: 0 } }],
    }));
    // The public request's connection is open before the flood: it is read in one look, as the
    // service's messages are.
    const probe = keptAlive(url);
    await probe.post({ jsonrpc: "2.0", id: 0, method: "getSlot" });
    const load = flood(url, CONNECTIONS, scans);
    await load.sent;
    // Every batch is under way: the chain has run a few scans of each.
    await vi.waitFor(() => expect(scanned).toBeGreaterThanOrEqual(3 * CONNECTIONS), {
      timeout: 60_000,
      interval: 10,
    });

    const order: string[] = [];
    const publicCall = probe.post({ jsonrpc: "2.0", id: 1, method: "getSlot" }).then((answer) => {
      order.push("public");
      return answer;
    });
    for (let i = 0; i < OWN_CALLS; i++) await rpc.getSlot().send();
    order.push("own");
    expect(await publicCall).toMatchObject({ result: expect.any(Number) });
    // The flood's batches are still being answered: the order above was taken under it.
    const finished = await Promise.race([load.done.then(() => true), Promise.resolve(false)]);
    await load.stop();
    probe.close();

    expect(finished).toBe(false);

    expect(order).toEqual(["own", "public"]);
  }, 120_000);
});

/**
 * The local chain's PubSub figures, against `npm run local-chain` in its own process (pinned to
 * core 0 when taskset is there; the clients here run on core 1):
 *
 * - the chain's RSS idle, and with 1,000 WebSocket connections open (each with one slot
 *   subscription, so each is a live subscriber);
 * - signature notifications a second delivered to 1,000 subscribers: fan-out (every connection
 *   subscribes to the same 20 signatures, 20,000 notifications) and one each (every connection
 *   subscribes to its own transaction's signature, 1,000 transactions sent 8 at a time), from the
 *   first send to the last notification read;
 * - the time from sendTransaction (the request leaving) to the `confirmed` signatureNotification
 *   read by the client, p50 and p99 over 500 sequential transactions.
 *
 * Prints figures; asserts nothing.
 *
 *   BENCH_ONLY=pubsub npm run bench    (or: node scripts/bench/pubsub.ts)
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import {
  createSolanaRpc,
  generateKeyPairSigner,
  getBase64EncodedWireTransaction,
  getSignatureFromTransaction,
} from "@solana/kit";
import { getTransferSolInstruction } from "@solana-program/system";
import WebSocket from "ws";
import { signedTransaction } from "../../test/support/chain-client.ts";
import { accepts, freePort, waitForPort } from "../../test/support/ports.ts";
import { npmScript, npmStartScript } from "./start-flags.ts";

const root = new URL("../..", import.meta.url).pathname;
const SOCKETS = 1000;
const FANOUT_SIGNATURES = 20;
const LATENCY_SAMPLES = 500;
/** sendTransaction requests in flight at once when each subscriber has its own transaction. */
const SEND_IN_FLIGHT = 8;

const has = (tool: string) => {
  try {
    execFileSync("sh", ["-c", `command -v ${tool}`], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
};
const rssMb = (pid: number) =>
  Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? Number.NaN) / 1024;

/** A WebSocket client that counts and routes what it reads. */
interface Subscriber {
  readonly ws: WebSocket;
  call(method: string, params?: unknown[]): Promise<unknown>;
  onNotification: (message: { method: string; params: { subscription: number } }) => void;
}

let nextId = 1;
async function subscriber(url: string): Promise<Subscriber> {
  const ws = new WebSocket(url, { perMessageDeflate: false });
  const answers = new Map<number, (result: unknown) => void>();
  const self: Subscriber = {
    ws,
    onNotification: () => {},
    call(method, params) {
      const id = nextId++;
      const answer = new Promise<unknown>((resolve) => answers.set(id, resolve));
      ws.send(JSON.stringify({ jsonrpc: "2.0", id, method, params }));
      return answer;
    },
  };
  ws.on("message", (data) => {
    const message = JSON.parse(String(data));
    if (message.id !== undefined) {
      if (message.error !== undefined) throw new Error(JSON.stringify(message.error));
      answers.get(message.id)?.(message.result);
      answers.delete(message.id);
    } else self.onNotification(message);
  });
  await new Promise<void>((resolve, reject) => {
    ws.once("open", () => resolve());
    ws.once("error", reject);
  });
  return self;
}

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number;

export async function pubsubFigures(): Promise<void> {
  const script = npmStartScript(root, "local-chain");
  const flags = (npmScript(root, "local-chain") as string).split(/\s+/).filter((w) => w.startsWith("--"));
  // The PubSub port is the next one: find a free pair.
  let port = await freePort();
  while (await accepts(port + 1)) port = await freePort();
  const argv = [process.execPath, ...flags, script];
  const command = has("taskset") ? ["taskset", "-c", "0", ...argv] : argv;
  const chain: ChildProcess = spawn(command[0] as string, command.slice(1), {
    cwd: root,
    env: {
      ...process.env,
      LOCAL_SOLANA_RPC_PORT: String(port),
      LOCAL_SOLANA_PUBSUB_MAX_CONNECTIONS: String(SOCKETS + 10),
      LOG_LEVEL: "warn",
    },
    stdio: ["ignore", "ignore", "inherit"],
  });
  if (has("taskset")) execFileSync("taskset", ["-p", "-c", "1", String(process.pid)], { stdio: "ignore" });
  try {
    await waitForPort(port);
    await waitForPort(port + 1);
    const pid = chain.pid as number;
    const rpcUrl = `http://127.0.0.1:${port}`;
    const wsUrl = `ws://127.0.0.1:${port + 1}`;
    const rpc = createSolanaRpc(rpcUrl);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const idleMb = rssMb(pid);

    const subscribers: Subscriber[] = [];
    for (let i = 0; i < SOCKETS; i += 50) {
      subscribers.push(...(await Promise.all(Array.from({ length: 50 }, () => subscriber(wsUrl)))));
    }
    const slotSubscriptions = await Promise.all(subscribers.map((s) => s.call("slotSubscribe")));
    await new Promise((resolve) => setTimeout(resolve, 2000));
    const openMb = rssMb(pid);
    console.log(
      `PubSub: the chain process's RSS ${idleMb.toFixed(1)} MB idle, ${openMb.toFixed(1)} MB with ${SOCKETS} WebSocket connections open (one slot subscription each)`,
    );

    // 1,000 slot notifications every slot would take the CPU the signature figures measure.
    await Promise.all(subscribers.map((s, i) => s.call("slotUnsubscribe", [slotSubscriptions[i]])));
    const payer = await generateKeyPairSigner();
    const airdrop = await fetch(rpcUrl, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "requestAirdrop",
        params: [payer.address, 1_000_000_000_000],
      }),
    });
    if (((await airdrop.json()) as { error?: unknown }).error !== undefined)
      throw new Error("the airdrop failed");
    let amount = 1n;
    const transfers = async (count: number) => {
      const { value: blockhash } = await rpc.getLatestBlockhash({ commitment: "confirmed" }).send();
      return Promise.all(
        Array.from({ length: count }, async () => {
          const signed = await signedTransaction(payer, blockhash, [
            getTransferSolInstruction({ source: payer, destination: payer.address, amount: amount++ }),
          ]);
          return {
            signature: getSignatureFromTransaction(signed),
            wire: getBase64EncodedWireTransaction(signed),
          };
        }),
      );
    };
    const send = (wire: string) =>
      fetch(rpcUrl, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          jsonrpc: "2.0",
          id: 1,
          method: "sendTransaction",
          params: [wire, { encoding: "base64", preflightCommitment: "confirmed" }],
        }),
      }).then(async (res) => {
        const answer = (await res.json()) as { error?: unknown };
        if (answer.error !== undefined) throw new Error(JSON.stringify(answer.error));
      });

    /**
     * Sends `txs`, `inFlight` requests at a time (HTTP/1.1: a connection each); resolves with the
     * seconds until `expected` notifications were read.
     */
    const deliver = async (txs: { wire: string }[], expected: number, inFlight = 1) => {
      let received = 0;
      let done: () => void = () => {};
      const all = new Promise<void>((resolve) => {
        done = resolve;
      });
      for (const s of subscribers) {
        s.onNotification = (message) => {
          if (message.method === "signatureNotification" && ++received === expected) done();
        };
      }
      const started = performance.now();
      let next = 0;
      await Promise.all(
        Array.from({ length: inFlight }, async () => {
          while (next < txs.length) await send((txs[next++] as { wire: string }).wire);
        }),
      );
      await all;
      return (performance.now() - started) / 1000;
    };

    // Fan-out: every connection subscribes to the same signatures.
    const fanout = await transfers(FANOUT_SIGNATURES);
    await Promise.all(
      subscribers.flatMap((s) =>
        fanout.map((tx) => s.call("signatureSubscribe", [tx.signature, { commitment: "confirmed" }])),
      ),
    );
    const fanoutSeconds = await deliver(fanout, SOCKETS * FANOUT_SIGNATURES);
    console.log(
      `PubSub: ${SOCKETS * FANOUT_SIGNATURES} signature notifications (${FANOUT_SIGNATURES} transactions, each to ${SOCKETS} subscribers) in ${(fanoutSeconds * 1000).toFixed(0)} ms: ${Math.round((SOCKETS * FANOUT_SIGNATURES) / fanoutSeconds)} notifications/s`,
    );

    // One each: every connection subscribes to its own transaction's signature.
    const own = await transfers(SOCKETS);
    await Promise.all(
      subscribers.map((s, i) =>
        s.call("signatureSubscribe", [own[i]?.signature, { commitment: "confirmed" }]),
      ),
    );
    const ownSeconds = await deliver(own, SOCKETS, SEND_IN_FLIGHT);
    console.log(
      `PubSub: ${SOCKETS} signature notifications (${SOCKETS} transactions, one subscriber each, sent over HTTP ${SEND_IN_FLIGHT} at a time) in ${(ownSeconds * 1000).toFixed(0)} ms: ${Math.round(SOCKETS / ownSeconds)} notifications/s`,
    );

    // Latency: one client, one transaction at a time, the other connections still open.
    for (const s of subscribers.slice(1)) s.ws.close();
    const probe = subscribers[0] as Subscriber;
    const latencies: number[] = [];
    const samples = await transfers(LATENCY_SAMPLES);
    for (const tx of samples) {
      const id = await probe.call("signatureSubscribe", [tx.signature, { commitment: "confirmed" }]);
      const notified = new Promise<void>((resolve) => {
        probe.onNotification = (message) => {
          if (message.method === "signatureNotification" && message.params.subscription === id) resolve();
        };
      });
      const started = performance.now();
      await Promise.all([send(tx.wire), notified]);
      latencies.push(performance.now() - started);
    }
    latencies.sort((a, b) => a - b);
    console.log(
      `PubSub: sendTransaction to its confirmed signatureNotification, ${LATENCY_SAMPLES} transactions: p50 ${percentile(latencies, 50).toFixed(2)} ms, p99 ${percentile(latencies, 99).toFixed(2)} ms`,
    );
    probe.ws.close();
  } finally {
    chain.kill("SIGTERM");
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await pubsubFigures();

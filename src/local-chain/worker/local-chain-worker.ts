import { parentPort, workerData } from "node:worker_threads";
import { createIdleHeapRelease } from "../../idle-heap-release.ts";
import { loadCatalog } from "../../token/catalog.ts";
import {
  type RunningLocalChain,
  type StartLocalChainOptions,
  startLocalChain,
} from "../start-local-chain.ts";
import type { ChainDelta } from "../state/chain-mirror.ts";
import { createKitShapes } from "./kit-shape.ts";
import { answerShaped } from "./local-transport.ts";

/**
 * The embedded local chain's thread (see local-chain-worker-host.ts): LiteSVM, the ledger, the
 * JSON-RPC port and the PubSub port run here, as `npm run local-chain` runs them (the same
 * startLocalChain), so nothing a chain client asks can hold the service's event loop. The service
 * reaches the chain through messages on the worker's port: JSON-RPC requests as values (structured
 * clone, bigints included), answered as kit reads them, and what the chain tells (log lines,
 * metrics) back the other way.
 */

/** What the host gives the worker: startLocalChain's options that are plain data. */
export type LocalChainWorkerData = Omit<
  StartLocalChainOptions,
  "catalog" | "log" | "onRequest" | "onRejected" | "onSaved" | "onUnexpected" | "onDelta" | "now" | "cacheDir"
> & {
  /** Tell the host what changes (a "delta" message per burst), so it can start the chain again on it. */
  readonly mirror?: boolean;
};

/** From the host. */
export type ToLocalChainWorker =
  | { readonly type: "request"; readonly id: number; readonly payload: unknown }
  | { readonly type: "airdrop"; readonly id: number; readonly address: string; readonly lamports: bigint }
  | { readonly type: "close" }
  /** Tests of the restart: the worker dies of an uncaught error, as a bug in the chain would kill it. */
  | { readonly type: "crash" };

/** To the host. */
export type FromLocalChainWorker =
  | {
      readonly type: "ready";
      readonly url: string | undefined;
      readonly pubsubUrl: string | undefined;
      /** The seed of the chain's own keys: the service signs its pools' side of a swap with them. */
      readonly keySeed: string;
      /** The service's own PubSub path (see ../pubsub/pubsub-server.ts). */
      readonly pubsubServiceUrl: string | undefined;
    }
  | { readonly type: "failed"; readonly error: PlainError }
  | {
      readonly type: "response";
      readonly id: number;
      readonly response: unknown;
      /** The result is in kit's final shape (see answerShaped). */
      readonly shaped?: true;
    }
  | { readonly type: "airdropped"; readonly id: number; readonly err: unknown }
  | {
      readonly type: "log";
      readonly level: "info" | "warn" | "error";
      readonly message: string;
      readonly fields?: Record<string, unknown>;
    }
  /** Requests answered since the last such message: one message a while, however many requests. */
  | { readonly type: "request-metrics"; readonly requests: readonly RequestMetric[] }
  | { readonly type: "rejected-metric"; readonly reason: string }
  | { readonly type: "saved-metric"; readonly ok: boolean; readonly seconds: number }
  /** Bytes of account data the chain holds and their bound, when they moved (sent with the request counts). */
  | { readonly type: "account-bytes"; readonly used: number; readonly max: number }
  /** What changed on the chain (see ../state/chain-mirror.ts), when the host mirrors it. */
  | { readonly type: "delta"; readonly delta: ChainDelta }
  | { readonly type: "closed" };

export interface RequestMetric {
  readonly method: string;
  readonly outcome: "ok" | "error";
  readonly code?: number;
}

/** How often the chain's request counts go to the service's thread. */
const METRICS_FLUSH_MS = 250;

/** An error as it crosses threads: what a log line shows of it (its own fields may not clone). */
export interface PlainError {
  readonly name: string;
  readonly message: string;
  readonly stack?: string;
  readonly code?: string;
}

export function plainError(error: unknown): PlainError {
  if (!(error instanceof Error)) return { name: "Error", message: String(error) };
  const code = (error as NodeJS.ErrnoException).code;
  return {
    name: error.name,
    message: error.message,
    ...(error.stack === undefined ? {} : { stack: error.stack }),
    ...(typeof code === "string" ? { code } : {}),
  };
}

/** Log fields made cloneable: errors become plain ones, the rest is left as it is (plain data). */
function plainFields(fields: Record<string, unknown> | undefined): Record<string, unknown> | undefined {
  if (fields === undefined) return undefined;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(fields))
    out[key] = value instanceof Error ? plainError(value) : value;
  return out;
}

async function serve(): Promise<void> {
  const port = parentPort;
  if (port === null) throw new Error("local-chain-worker.ts runs as a worker thread only");
  const post = (message: FromLocalChainWorker) => port.postMessage(message);
  const { mirror, ...options } = workerData as LocalChainWorkerData;
  // Counted here and sent in bulk: a flood of cheap requests on the chain's port must not become a
  // flood of messages for the service's thread to handle one by one.
  let requests: RequestMetric[] = [];
  let running: RunningLocalChain | undefined;
  let accountBytesSent: number | undefined;
  const flush = () => {
    const bytes = running?.chain.accountBytes;
    if (bytes !== undefined && bytes.used !== accountBytesSent) {
      accountBytesSent = bytes.used;
      post({ type: "account-bytes", used: bytes.used, max: bytes.max });
    }
    if (requests.length === 0) return;
    post({ type: "request-metrics", requests });
    requests = [];
  };
  setInterval(flush, METRICS_FLUSH_MS).unref();
  try {
    running = await startLocalChain({
      ...options,
      catalog: loadCatalog(),
      log: (level, message, fields) => {
        const plain = plainFields(fields);
        post({ type: "log", level, message, ...(plain === undefined ? {} : { fields: plain }) });
      },
      onRequest: (method, outcome, code) => {
        requests.push(code === undefined ? { method, outcome } : { method, outcome, code });
      },
      onRejected: (reason) => post({ type: "rejected-metric", reason }),
      onSaved: (outcome) => post({ type: "saved-metric", ok: outcome.ok, seconds: outcome.seconds }),
      ...(mirror === true ? { onDelta: (delta: ChainDelta) => post({ type: "delta", delta }) } : {}),
      onUnexpected: (error, method) =>
        post({
          type: "log",
          level: "error",
          message: "local chain: a JSON-RPC method failed",
          fields: { err: plainError(error), method },
        }),
    });
  } catch (error) {
    post({ type: "failed", error: plainError(error) });
    port.close();
    return;
  }
  const chain = running;
  const shapes = createKitShapes();
  port.on("message", (message: ToLocalChainWorker) => {
    switch (message.type) {
      case "request":
        // handleValue never rejects: what fails answers -32603.
        void answerShaped(chain.handler, message.payload, shapes).then(({ response, shaped }) =>
          post({ type: "response", id: message.id, response, ...(shaped ? { shaped } : {}) }),
        );
        return;
      case "airdrop": {
        const signature = chain.chain.airdrop(message.address, message.lamports);
        const status = chain.chain.status(signature);
        post({
          type: "airdropped",
          id: message.id,
          err: status === null ? "the airdrop did not land" : (status.err ?? null),
        });
        return;
      }
      case "crash":
        setImmediate(() => {
          throw new Error("the local chain's worker was told to crash (a test of its restart)");
        });
        return;
      case "close":
        void chain.close().finally(() => {
          flush();
          post({ type: "closed" });
          port.close();
        });
        return;
    }
  });
  flush();
  post({
    type: "ready",
    url: chain.url,
    pubsubUrl: chain.pubsub?.url,
    pubsubServiceUrl: chain.pubsub?.serviceUrl,
    keySeed: chain.keys.seed,
  });
  // The chain's heap is its own: it gives back what start-up and bursts left, as the service's
  // does (see idle-heap-release.ts; the collector is there when the process runs with --expose-gc).
  const gc = globalThis.gc;
  if (gc !== undefined) {
    createIdleHeapRelease({
      collect: () => gc({ type: "major", execution: "sync", flavor: "last-resort" }),
    }).start();
  }
}

await serve();

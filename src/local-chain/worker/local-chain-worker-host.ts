import { randomBytes } from "node:crypto";
import { Worker } from "node:worker_threads";
import type { RpcTransport } from "@solana/kit";
import { KitShapedAnswer } from "../../chain/chain-rpc.ts";
import { TransportError } from "../../chain/transport-error.ts";
import { type ChainKeys, createChainKeys } from "../state/chain-keys.ts";
import { createChainMirror } from "../state/chain-mirror.ts";
import type {
  FromLocalChainWorker,
  LocalChainWorkerData,
  PlainError,
  ToLocalChainWorker,
} from "./local-chain-worker.ts";

export interface LocalChainWorkerOptions extends LocalChainWorkerData {
  /** How long a request may wait for the chain's answer (SOLANA_RPC_TIMEOUT_MS); then it fails as a timeout. */
  readonly timeoutMs: number;
  /** First wait before a crashed worker is started again; doubled on each crash in a row. */
  readonly restartBaseMs?: number;
  /** Longest wait between restarts. */
  readonly restartMaxMs?: number;
  readonly log: (level: "info" | "warn" | "error", message: string, fields?: Record<string, unknown>) => void;
  readonly onRequest?: (method: string, outcome: "ok" | "error", code?: number) => void;
  readonly onRejected?: (reason: string) => void;
  readonly onSaved?: (outcome: { ok: boolean; seconds: number }) => void;
  /** Bytes of account data the chain holds and their bound, each time they move. */
  readonly onAccountBytes?: (figures: { used: number; max: number }) => void;
}

/** The embedded local chain as the service holds it: a worker thread, reached by messages. */
export interface EmbeddedLocalChain {
  /** @solana/kit's transport to the chain: requests cross as values on the worker's port. */
  readonly transport: RpcTransport;
  /** http://127.0.0.1:port of the chain's JSON-RPC (the worker serves it), when a port serves. */
  readonly url: string | undefined;
  /**
   * The chain's PubSub port (ws://127.0.0.1:port + 1), when a port serves; `serviceUrl` is the
   * service's own path on it, outside the clients' subscription caps (see ../pubsub/pubsub-server.ts): for
   * the service's watch only, never shown.
   */
  readonly pubsub: { readonly url: string; readonly serviceUrl: string } | undefined;
  /**
   * The chain's own keys (../state/chain-keys.ts): its pools' and its mints' authority, from the seed its
   * state holds. The same across the worker's restarts.
   */
  readonly keys: ChainKeys;
  /** True while the worker serves; false while it is (re)starting. */
  readonly available: boolean;
  /** Sends `lamports` from the faucet to `address`; resolves with the airdrop's error (null: it landed). */
  airdrop(address: string, lamports: bigint): Promise<unknown>;
  /** Resolves once the worker serves (at once when it does). */
  ready(): Promise<void>;
  /**
   * Kills the worker (tests of the restart): "error" makes it die of an uncaught error, as a bug
   * in the chain would; "terminate" ends its thread from outside.
   */
  crash(how?: "error" | "terminate"): Promise<void>;
  /** Stops the worker: its ports close and its state is saved a last time. */
  close(): Promise<void>;
}

/**
 * Transactions the mirror of a chain without a state file keeps for a restart (besides those
 * whose blockhash is still valid): the recent history, a few megabytes, not the whole window.
 */
const MIRRORED_ENTRIES = 2_000;
const DEFAULT_RESTART_BASE_MS = 250;
const DEFAULT_RESTART_MAX_MS = 30_000;
/** A worker that served this long has recovered: the next crash waits the base time again. */
const HEALTHY_AFTER_MS = 60_000;
/** How long close() waits for the worker to save and stop before it is ended. */
const CLOSE_TIMEOUT_MS = 10_000;

/**
 * Where the worker's code is: next to this file when it runs from the sources (Node strips the
 * types), or dist/src/local-chain-worker.js, its own entry of the build (scripts/build.ts), when it
 * runs from dist/ (the build gives every module its own import.meta.url, dist/src/local-chain/worker/…).
 */
function workerEntry(): URL {
  return import.meta.url.endsWith(".ts")
    ? new URL("./local-chain-worker.ts", import.meta.url)
    : new URL("../../local-chain-worker.js", import.meta.url);
}

/**
 * Starts the embedded local chain in a worker thread (see local-chain-worker.ts) and keeps it
 * running: a worker that crashes is logged with its error, the requests it held fail as
 * unreachable (the resilient transport turns that into `unavailable`), and it is started again
 * after a backoff, on the same port, from the saved state (LOCAL_SOLANA_STATE) or, without one,
 * from the genesis and the changes mirrored here (../state/chain-mirror.ts): the chain as it was a moment
 * before the crash. Resolves once the
 * chain serves; rejects when the first start fails (an error whose `code` is the worker's, e.g.
 * EADDRINUSE).
 */
export async function startLocalChainWorker(options: LocalChainWorkerOptions): Promise<EmbeddedLocalChain> {
  const { log, timeoutMs } = options;
  const restartBaseMs = options.restartBaseMs ?? DEFAULT_RESTART_BASE_MS;
  const restartMaxMs = options.restartMaxMs ?? DEFAULT_RESTART_MAX_MS;
  // Without a state file, the chain's changes are mirrored here, and a worker started again after
  // a crash starts on them rather than on a new genesis under agents whose wallets it forgot.
  const mirror =
    options.statePath === undefined ? createChainMirror({ keepEntries: MIRRORED_ENTRIES }) : undefined;
  // The secret of the service's own PubSub path: made here, so that a restarted worker keeps it
  // (the watch reconnects to the same URL).
  let data: LocalChainWorkerData = {
    ...workerDataOf(options),
    mirror: mirror !== undefined,
    pubsubServiceToken: randomBytes(24).toString("base64url"),
  };
  let worker: Worker | undefined;
  let available = false;
  let closing = false;
  let crashes = 0;
  let servingSince = 0;
  let url: string | undefined;
  let pubsubUrl: string | undefined;
  let keys: ChainKeys | undefined;
  let pubsubServiceUrl: string | undefined;
  let nextId = 1;
  const pending = new Map<number, { resolve: (value: unknown) => void; reject: (error: unknown) => void }>();
  let readyWaiters: (() => void)[] = [];
  let restartTimer: NodeJS.Timeout | undefined;
  let closed: (() => void) | undefined;

  const failPending = (message: string) => {
    for (const { reject } of pending.values()) reject(new TransportError("unreachable", message));
    pending.clear();
  };

  const launch = (): Promise<void> =>
    new Promise((resolve, reject) => {
      let started = false;
      let lastError: unknown;
      const current = new Worker(workerEntry(), { workerData: data });
      worker = current;
      current.on("message", (message: FromLocalChainWorker) => {
        switch (message.type) {
          case "ready":
            started = true;
            available = true;
            servingSince = performance.now();
            url = message.url;
            pubsubUrl = message.pubsubUrl;
            pubsubServiceUrl = message.pubsubServiceUrl;
            // A restart keeps the port the first start took (port 0: any free one), and the
            // chain's keys: without a state file it starts from the genesis again, and its
            // pools must stay where the service's swap routes know them.
            if (url !== undefined) data = { ...data, port: Number(new URL(url).port) };
            data = { ...data, keySeed: message.keySeed };
            if (keys?.seed !== message.keySeed) keys = createChainKeys(message.keySeed);
            for (const waiter of readyWaiters) waiter();
            readyWaiters = [];
            resolve();
            return;
          case "failed":
            // It could not start (its port taken, say): end it, and the exit rejects with this.
            lastError = errorOf(message.error);
            void current.terminate();
            return;
          case "response":
          case "airdropped": {
            const waiting = pending.get(message.id);
            pending.delete(message.id);
            waiting?.resolve(
              message.type === "airdropped"
                ? message.err
                : message.shaped === true
                  ? new KitShapedAnswer((message.response as { result: unknown }).result)
                  : message.response,
            );
            return;
          }
          case "log":
            log(
              message.level,
              message.message,
              message.fields === undefined ? undefined : withErrors(message.fields),
            );
            return;
          case "request-metrics":
            for (const { method, outcome, code } of message.requests)
              options.onRequest?.(method, outcome, code);
            return;
          case "rejected-metric":
            options.onRejected?.(message.reason);
            return;
          case "saved-metric":
            options.onSaved?.({ ok: message.ok, seconds: message.seconds });
            return;
          case "account-bytes":
            options.onAccountBytes?.({ used: message.used, max: message.max });
            return;
          case "delta":
            mirror?.apply(message.delta);
            return;
          case "closed":
            // Saved and its ports closed: whatever timers it still has need not run.
            void current.terminate();
            return;
        }
      });
      current.on("error", (error) => {
        lastError = error;
      });
      current.on("exit", (code) => {
        if (worker === current) worker = undefined;
        available = false;
        if (closing) {
          failPending("the embedded local chain has stopped");
          closed?.();
          return;
        }
        if (!started) {
          reject(lastError ?? new Error(`the local chain's worker exited (code ${code}) before it served`));
          return;
        }
        failPending("the embedded local chain is restarting");
        const restore = mirror?.delta();
        if (restore !== undefined) data = { ...data, restore };
        crashes = performance.now() - servingSince > HEALTHY_AFTER_MS ? 1 : crashes + 1;
        const waitMs = Math.min(restartMaxMs, restartBaseMs * 2 ** (crashes - 1));
        log(
          "error",
          "the embedded local chain's worker stopped; chain calls answer unavailable until it is back",
          {
            ...(lastError === undefined ? {} : { err: lastError }),
            exit_code: code,
            restart_in_ms: waitMs,
          },
        );
        scheduleRestart(waitMs);
      });
    });

  const scheduleRestart = (waitMs: number) => {
    restartTimer = setTimeout(() => {
      restartTimer = undefined;
      if (closing) return;
      launch().then(
        () =>
          log("info", "the embedded local chain's worker serves again", { state: data.statePath ?? null }),
        (error: unknown) => {
          crashes++;
          const next = Math.min(restartMaxMs, restartBaseMs * 2 ** (crashes - 1));
          log("error", "the embedded local chain's worker could not start again", {
            err: error,
            restart_in_ms: next,
          });
          scheduleRestart(next);
        },
      );
    }, waitMs);
  };

  /** Posts a message that expects one answer, bounded by the timeout and the caller's signal. */
  const ask = (
    make: (id: number) => ToLocalChainWorker,
    signal: AbortSignal | undefined,
  ): Promise<unknown> => {
    const current = worker;
    if (current === undefined || !available) {
      return Promise.reject(new TransportError("unreachable", "the embedded local chain is restarting"));
    }
    const id = nextId++;
    return new Promise((resolve, reject) => {
      const done = () => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", abort);
      };
      const timer = setTimeout(() => {
        pending.delete(id);
        done();
        reject(new TransportError("timeout", "the embedded local chain did not answer in time"));
      }, timeoutMs);
      const abort = () => {
        pending.delete(id);
        done();
        reject(signal?.reason);
      };
      signal?.addEventListener("abort", abort, { once: true });
      pending.set(id, {
        resolve: (value) => {
          done();
          resolve(value);
        },
        reject: (error) => {
          done();
          reject(error);
        },
      });
      current.postMessage(make(id));
    });
  };

  await launch();
  return {
    transport: (async ({ payload, signal }) => {
      signal?.throwIfAborted();
      return ask((id) => ({ type: "request", id, payload }), signal);
    }) as RpcTransport,
    get url() {
      return url;
    },
    get pubsub() {
      return pubsubUrl === undefined || pubsubServiceUrl === undefined
        ? undefined
        : { url: pubsubUrl, serviceUrl: pubsubServiceUrl };
    },
    get keys() {
      return keys as ChainKeys;
    },
    get available() {
      return available;
    },
    airdrop: (address, lamports) => ask((id) => ({ type: "airdrop", id, address, lamports }), undefined),
    ready: () => (available ? Promise.resolve() : new Promise<void>((resolve) => readyWaiters.push(resolve))),
    async crash(how = "error") {
      const current = worker;
      if (current === undefined) return;
      const gone = new Promise((resolve) => current.once("exit", resolve));
      if (how === "terminate") void current.terminate();
      else current.postMessage({ type: "crash" } satisfies ToLocalChainWorker);
      await gone;
    },
    async close() {
      closing = true;
      clearTimeout(restartTimer);
      const current = worker;
      if (current === undefined) return;
      const stopped = new Promise<void>((resolve) => {
        closed = resolve;
      });
      current.postMessage({ type: "close" } satisfies ToLocalChainWorker);
      const timer = setTimeout(() => void current.terminate(), CLOSE_TIMEOUT_MS);
      await stopped;
      clearTimeout(timer);
    },
  };
}

function workerDataOf(options: LocalChainWorkerOptions): LocalChainWorkerData {
  const {
    timeoutMs,
    restartBaseMs,
    restartMaxMs,
    log,
    onRequest,
    onRejected,
    onSaved,
    onAccountBytes,
    ...data
  } = options;
  return data;
}

/** The worker's error as an Error again, with its code (EADDRINUSE is read by the caller). */
function errorOf(plain: PlainError): Error {
  const error = new Error(plain.message) as NodeJS.ErrnoException;
  error.name = plain.name;
  if (plain.stack !== undefined) error.stack = plain.stack;
  if (plain.code !== undefined) error.code = plain.code;
  return error;
}

/** Log fields with the worker's plain errors as errors again, so the logger serializes them as it does its own. */
function withErrors(fields: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(fields)) {
    const plain = value as Partial<PlainError> | null;
    out[key] =
      key === "err" && typeof plain === "object" && plain !== null && typeof plain.message === "string"
        ? errorOf(plain as PlainError)
        : value;
  }
  return out;
}

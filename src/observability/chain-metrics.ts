import { Counter, Gauge, Histogram, type Registry } from "prom-client";
import type { RequestOutcome } from "../chain/resilient-transport.ts";

/** Solana JSON-RPC request durations, in seconds: from a cached local answer to a timeout. */
const DURATION_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** The JSON-RPC methods the chain adapter calls; any other name is counted as "other". */
const KNOWN_METHODS = new Set([
  "getAccountInfo",
  "getHealth",
  "getSignaturesForAddress",
  "getTransaction",
  "getMultipleAccounts",
  "getLatestBlockhash",
  "getSignatureStatuses",
  "sendTransaction",
  "simulateTransaction",
  "getSlot",
  "getBlockHeight",
  "getBalance",
]);

/**
 * The chain adapter's requests on the server's registry: every attempt by JSON-RPC method and
 * outcome (`ok`, `rpc_error`, `timeout`, `unreachable`, `rate_limited`, `http_error`,
 * `too_large`, `bad_response`, `overloaded`, `cancelled`), and their durations. Returned as the
 * callback the resilient transport reports to, so the transport stays free of prom-client.
 */
export function registerChainMetrics(
  registry: Registry,
): (method: string, outcome: RequestOutcome, seconds: number) => void {
  const requests = new Counter({
    name: "solana_rpc_requests_total",
    help: "Solana JSON-RPC requests made by the chain adapter (each attempt), by method and outcome.",
    labelNames: ["method", "outcome"] as const,
    registers: [registry],
  });
  const duration = new Histogram({
    name: "solana_rpc_request_duration_seconds",
    help: "Time one Solana JSON-RPC request took, by method, in seconds.",
    labelNames: ["method"] as const,
    buckets: DURATION_BUCKETS,
    registers: [registry],
  });
  return (method, outcome, seconds) => {
    const label = KNOWN_METHODS.has(method) ? method : "other";
    requests.inc({ method: label, outcome });
    if (outcome !== "overloaded" && outcome !== "cancelled") duration.observe({ method: label }, seconds);
  };
}

/**
 * The embedded local chain's JSON-RPC on the server's registry: requests by method and outcome
 * (`ok`, or the JSON-RPC error code), and what its port turned away before JSON-RPC saw it or cut
 * off (requests, connections past the cap, answers past the write timeout); and the saves of its
 * state (LOCAL_SOLANA_STATE), by outcome and duration; and the bytes of account data it holds,
 * against their bound (LOCAL_SOLANA_MAX_ACCOUNT_BYTES).
 */
export function registerLocalChainMetrics(
  registry: Registry,
  methods: readonly string[],
): {
  onRequest(method: string, outcome: "ok" | "error", code?: number): void;
  onRejected(reason: string): void;
  onSaved(outcome: { ok: boolean; seconds: number }): void;
  onAccountBytes(figures: { used: number; max: number }): void;
} {
  const accountBytes = new Gauge({
    name: "local_chain_account_data_bytes",
    help: "Bytes of account data the local chain holds (what genesis, transactions and cheatcodes wrote).",
    registers: [registry],
  });
  const accountBytesMax = new Gauge({
    name: "local_chain_account_data_max_bytes",
    help: "Bytes of account data the local chain may hold (LOCAL_SOLANA_MAX_ACCOUNT_BYTES); past it new space is refused.",
    registers: [registry],
  });
  const saves = new Counter({
    name: "local_chain_state_saves_total",
    help: "Saves of the local chain's state file, by outcome (ok or error).",
    labelNames: ["outcome"] as const,
    registers: [registry],
  });
  const saveSeconds = new Histogram({
    name: "local_chain_state_save_seconds",
    help: "How long a save of the local chain's state took, the event loop free meanwhile.",
    buckets: [0.01, 0.05, 0.1, 0.5, 1, 5, 30],
    registers: [registry],
  });
  const known = new Set(methods);
  const requests = new Counter({
    name: "local_chain_rpc_requests_total",
    help: "JSON-RPC requests the embedded local chain answered, by method and outcome (ok or the error code).",
    labelNames: ["method", "outcome"] as const,
    registers: [registry],
  });
  const rejections = new Counter({
    name: "local_chain_http_rejections_total",
    help: "Requests and connections the local chain's JSON-RPC port turned away before JSON-RPC, or answers it cut off, by reason; its PubSub port's refusals and cut-off clients have reasons starting pubsub_.",
    labelNames: ["reason"] as const,
    registers: [registry],
  });
  return {
    onRequest(method, outcome, code) {
      const label = known.has(method) ? method : method === "invalid" ? "invalid" : "unknown";
      requests.inc({ method: label, outcome: outcome === "ok" ? "ok" : String(code ?? "error") });
    },
    onRejected: (reason) => rejections.inc({ reason }),
    onSaved(outcome) {
      saves.inc({ outcome: outcome.ok ? "ok" : "error" });
      saveSeconds.observe(outcome.seconds);
    },
    onAccountBytes({ used, max }) {
      accountBytes.set(used);
      accountBytesMax.set(max);
    },
  };
}

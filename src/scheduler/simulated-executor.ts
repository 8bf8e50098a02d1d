import { createHash } from "node:crypto";
import type { AgentKinds } from "../kinds/agent-kinds.ts";
import type { PriceSource } from "../token/token-source.ts";
import { abortableSleep } from "./abortable-sleep.ts";
import type { Executor } from "./executor.ts";

export interface SimulatedFaults {
  /**
   * Share of attempts (0..1) that fail. Which ones is a pure function of (agent, slot, attempt), so
   * every replica and every rerun agrees: deterministic, yet spread over agents and slots.
   */
  readonly failureRate?: number;
  /** Attempts that hang (never answer until aborted), as a share of attempts, chosen the same way. */
  readonly hangRate?: number;
  /** How long an attempt takes, in ms (a chain transaction takes seconds; tests want less). */
  readonly latencyMs?: number;
}

/**
 * Runs agents without touching a chain, on the catalog's mints and the price source's prices: each
 * kind says its result (AgentKind.simulate; a transfer records the amount and token, a swap quotes
 * its output from the prices less `slippageBps`). Deterministic where it counts: the same (agent,
 * slot) gives the same simulated signature on every attempt and replica (a transfer the same
 * result; a swap's quote follows the prices of the moment), which is how it honours the
 * idempotency key. Tests make attempts fail or hang through `faults` (SIMULATED_FAILURE_RATE,
 * SIMULATED_HANG_RATE).
 */
export function createSimulatedExecutor(options: {
  /** Each kind's result when nothing moves. */
  kinds: AgentKinds;
  tokens: PriceSource;
  /** The catalog's mint of a symbol agents name. */
  mintOf: (symbol: string) => string | undefined;
  faults?: SimulatedFaults;
}): Executor {
  const { tokens, mintOf } = options;
  const faults = options.faults ?? {};
  return {
    async execute(execution) {
      const { agent, idempotencyKey, attempt, signal } = execution;
      const roll = unitInterval(`${idempotencyKey}.${attempt}`);
      if (roll < (faults.hangRate ?? 0)) {
        await abortableSleep(Number.POSITIVE_INFINITY, signal);
        return { ok: false, error: "the run was abandoned before it finished" };
      }
      if ((faults.latencyMs ?? 0) > 0) await abortableSleep(faults.latencyMs ?? 0, signal);
      if (signal.aborted) return { ok: false, error: "the run was abandoned before it finished" };
      if (roll < (faults.hangRate ?? 0) + (faults.failureRate ?? 0)) {
        return { ok: false, error: "simulated failure" };
      }
      const signature = simulatedSignature(idempotencyKey);
      return options.kinds.of(agent).simulate({
        config: agent.config,
        agent,
        scheduledAt: execution.scheduledAt,
        prices: tokens,
        mintOf,
        signature,
      });
    },
  };
}

/** A base58-looking 64-byte signature derived from the key, as a chain would return one. */
function simulatedSignature(key: string): string {
  const alphabet = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";
  const bytes = Buffer.concat([
    createHash("sha256").update(`sig1.${key}`).digest(),
    createHash("sha256").update(`sig2.${key}`).digest(),
  ]);
  let out = "";
  for (const byte of bytes) out += alphabet[byte % 58];
  return out + out.slice(0, 24);
}

/** A number in [0, 1) from a string, the same everywhere. */
function unitInterval(text: string): number {
  return createHash("sha256").update(text).digest().readUInt32BE(0) / 2 ** 32;
}

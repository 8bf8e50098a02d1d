import { Gauge, type Registry } from "prom-client";
import type { ExecutorBalance } from "../chain/executor-balance.ts";

/**
 * `executor_balance_lamports`: the fee payer's balance at its last reading (absent before the
 * first), so an alert can fire before runs start failing for want of fees.
 */
export function registerExecutorMetrics(registry: Registry, balance: ExecutorBalance): void {
  new Gauge({
    name: "executor_balance_lamports",
    help: "Lamports of the executor (the fee payer of every run) at its last reading; runs fail once it cannot pay fees.",
    registers: [registry],
    collect() {
      const lamports = balance.lamports();
      if (lamports !== undefined) this.set(Number(lamports));
    },
  });
}

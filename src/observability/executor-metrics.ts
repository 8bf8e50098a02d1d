import { Counter, Gauge, type Registry } from "prom-client";
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

/**
 * `executor_rent_lamports_total` and `executor_accounts_created_total`: the rent the executor paid
 * for token accounts its runs created (a transfer's destination that had none, within
 * TRANSFER_MAX_ACCOUNT_CREATIONS_PER_DAY), so that rent spent on other people's accounts shows.
 */
export function registerExecutorRentMetrics(registry: Registry): (lamports: number) => void {
  const rent = new Counter({
    name: "executor_rent_lamports_total",
    help: "Lamports of rent the executor paid for token accounts that runs created (transfer destinations that had none).",
    registers: [registry],
  });
  const created = new Counter({
    name: "executor_accounts_created_total",
    help: "Token accounts that runs created with the executor paying their rent.",
    registers: [registry],
  });
  return (lamports) => {
    rent.inc(lamports);
    created.inc();
  };
}

import { Counter, Histogram, type Registry } from "prom-client";
import type { SchedulerEvents } from "../scheduler/scheduler.ts";

/** Schedule lag in seconds: from on time to an hour late. */
const LAG_BUCKETS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 3600];

/**
 * The scheduler's figures on the server's registry: runs by outcome, schedule lag (run start minus
 * its slot), rounds of pending agents' checks and leases taken over from replicas that crashed or stalled. Returned as the scheduler
 * events that feed them, so the scheduler stays free of prom-client.
 */
export function registerSchedulerMetrics(
  registry: Registry,
): Required<Pick<SchedulerEvents, "onRun" | "onTakeover" | "onPendingRound">> {
  const runs = new Counter({
    name: "agent_runs_total",
    help: "Agent run attempts finished and recorded, by outcome.",
    labelNames: ["outcome"] as const,
    registers: [registry],
  });
  const lag = new Histogram({
    name: "agent_schedule_lag_seconds",
    help: "Time from a slot to the start of a run attempt for it, in seconds.",
    buckets: LAG_BUCKETS,
    registers: [registry],
  });
  const takeovers = new Counter({
    name: "agent_lease_takeovers_total",
    help: "Slot leases taken over after their holder stopped renewing them.",
    registers: [registry],
  });
  // Rounds, not agents: how many pending agents a round checks is its budget's business; a count
  // that stops rising says this replica's scheduler has stopped activating anything.
  const pendingRounds = new Counter({
    name: "agent_pending_check_rounds_total",
    help: "Rounds of pending agents' approval checks begun by this replica's scheduler (at most one a poll).",
    registers: [registry],
  });
  return {
    onPendingRound() {
      pendingRounds.inc();
    },
    onRun(run, lagMs) {
      runs.inc({ outcome: run.outcome });
      lag.observe(Math.max(0, lagMs) / 1000);
    },
    onTakeover() {
      takeovers.inc();
    },
  };
}

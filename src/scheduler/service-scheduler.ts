import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import type { Registry } from "prom-client";
import type { AgentRecord } from "../agent/agent-store.ts";
import type { AppContext } from "../app-context.ts";
import { registerSchedulerMetrics } from "../observability/scheduler-metrics.ts";
import { createScheduler, type Scheduler } from "./scheduler.ts";

/** The config members naming catalog tokens, by agent type. */
const TOKEN_FIELDS: Record<string, readonly string[]> = {
  transfer: ["token"],
  swap: ["inputToken", "outputToken"],
};

/**
 * The scheduler as the service runs it: on the context's stores and executor, with its settings
 * from the configuration, one log line per run and the scheduler metrics on `registry`.
 */
export function createServiceScheduler(context: AppContext, registry: Registry): Scheduler {
  const { config, logger, tokenSource } = context;
  const settings = config.scheduler;
  const worker = `${hostname()}.${process.pid}.${randomBytes(3).toString("hex")}`;
  const metrics = registerSchedulerMetrics(registry);
  return createScheduler({
    agents: context.agentStore,
    runs: context.runStore,
    executor: context.executor,
    clock: context.scheduleClock,
    worker,
    concurrency: settings.concurrency,
    pollIntervalMs: settings.pollIntervalMs,
    leaseMs: settings.leaseMs,
    attemptTimeoutMs: settings.attemptTimeoutMs,
    maxAttempts: settings.maxAttempts,
    retryBaseMs: settings.retryBaseMs,
    retryMaxMs: settings.retryMaxMs,
    maxConsecutiveFailures: settings.maxConsecutiveFailures,
    // An agent can run while every token it names is still in the catalog.
    async checkRunnable(agent: AgentRecord) {
      for (const field of TOKEN_FIELDS[agent.type] ?? []) {
        const symbol = agent.config[field];
        if (typeof symbol !== "string" || (await tokenSource.canonicalSymbol(symbol)) === undefined) {
          return `config.${field} names a token that is no longer in the catalog`;
        }
      }
      return undefined;
    },
    events: {
      onRun(run, lagMs) {
        metrics.onRun(run, lagMs, worker);
        logger.info(
          {
            agent_id: run.agentId,
            run_id: run.runId,
            scheduled_at: run.scheduledAt.toISOString(),
            attempt: run.attempt,
            outcome: run.outcome,
            lag_ms: lagMs,
            duration_ms: run.finishedAt.getTime() - run.startedAt.getTime(),
            worker,
          },
          "agent run",
        );
      },
      onTakeover(slot) {
        metrics.onTakeover(slot);
        logger.warn(
          { agent_id: slot.agentId, scheduled_at: slot.scheduledAt.toISOString(), worker },
          "lease taken over",
        );
      },
      onStatus(agent, status, reason) {
        logger.info({ agent_id: agent.agentId, status, reason, worker }, "agent status changed");
      },
      onError(error, what) {
        logger.warn({ err: error, worker }, `scheduler: ${what} failed`);
      },
    },
  });
}

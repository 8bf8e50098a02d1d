import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import type { Registry } from "prom-client";
import type { AgentRecord, AgentStore } from "../agent/agent-store.ts";
import type { SchedulerConfig } from "../config.ts";
import type { EventLog } from "../events/event-log.ts";
import { createRunAnnouncer } from "../events/run-announcer.ts";
import type { AgentKinds } from "../kinds/agent-kinds.ts";
import type { Logger } from "../logger.ts";
import { registerSchedulerMetrics } from "../observability/scheduler-metrics.ts";
import type { CheckClaims } from "./check-claims.ts";
import type { Executor } from "./executor.ts";
import type { RunStore } from "./run-store.ts";
import type { ScheduleClock } from "./schedule-clock.ts";
import { createScheduler, type ReadinessCheck, type Scheduler } from "./scheduler.ts";

export interface ServiceSchedulerOptions {
  readonly settings: SchedulerConfig;
  readonly logger: Logger;
  readonly agents: AgentStore;
  readonly runs: RunStore;
  readonly executor: Executor;
  /** The agent kinds: which config members of each name catalog tokens. */
  readonly kinds: AgentKinds;
  readonly clock: ScheduleClock;
  /** The token list's spelling of a symbol, or undefined when the list does not hold it. */
  readonly canonicalSymbol: (symbol: string) => Promise<string | undefined>;
  readonly registry: Registry;
  /** Where runs are announced (the event log WatchAgentEvents serves). */
  readonly events?: EventLog;
  /** What a pending agent waits for (its approval), and for how long at most. */
  readonly awaitReady?: ReadinessCheck;
  readonly readyWaitMs?: number;
  /** Claims of pending agents' checks, shared by the replicas. */
  readonly checkClaims?: CheckClaims;
  /** The pending agents known here changed (a watch of their accounts follows them). */
  readonly onPendingChanged?: () => void;
}

/**
 * The scheduler as the service runs it: on the stores and executor given, with its settings from
 * the configuration, one log line per run and the scheduler metrics on `registry`.
 */
export function createServiceScheduler(options: ServiceSchedulerOptions): Scheduler {
  const { settings, logger, canonicalSymbol, registry } = options;
  const worker = `${hostname()}.${process.pid}.${randomBytes(3).toString("hex")}`;
  const metrics = registerSchedulerMetrics(registry);
  return createScheduler({
    agents: options.agents,
    runs: options.runs,
    executor: options.executor,
    clock: options.clock,
    timingOf: (type) => options.kinds.get(type)?.timing,
    worker,
    concurrency: settings.concurrency,
    pollIntervalMs: settings.pollIntervalMs,
    leaseMs: settings.leaseMs,
    attemptTimeoutMs: settings.attemptTimeoutMs,
    maxAttempts: settings.maxAttempts,
    retryBaseMs: settings.retryBaseMs,
    retryMaxMs: settings.retryMaxMs,
    maxConsecutiveFailures: settings.maxConsecutiveFailures,
    ...(options.awaitReady === undefined ? {} : { awaitReady: options.awaitReady }),
    ...(options.readyWaitMs === undefined ? {} : { readyWaitMs: options.readyWaitMs }),
    ...(options.checkClaims === undefined ? {} : { checkClaims: options.checkClaims }),
    ...(options.onPendingChanged === undefined ? {} : { onPendingChanged: options.onPendingChanged }),
    ...(options.events === undefined
      ? {}
      : {
          runEvents: createRunAnnouncer({
            log: options.events,
            onError: (error) => logger.warn({ err: error, worker }, "announcing a run failed"),
          }),
        }),
    // An agent can run while every token it names is still in the catalog.
    async checkRunnable(agent: AgentRecord) {
      for (const field of options.kinds.get(agent.type)?.settings.tokenFields ?? []) {
        const symbol = agent.config[field];
        if (typeof symbol !== "string" || (await canonicalSymbol(symbol)) === undefined) {
          return `config.${field} names a token that is no longer in the catalog`;
        }
      }
      return undefined;
    },
    events: {
      onPendingRound: metrics.onPendingRound,
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

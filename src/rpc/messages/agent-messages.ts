/** AgentService's messages: the domain's agents, runs, approvals and events as protobuf. */
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import {
  AgentEventSchema,
  AgentRunSchema,
  AgentSchema,
  AgentSummarySchema,
  PriceObservationSchema,
  TriggerFiringSchema,
  TriggerWatchSchema,
} from "../../../gen/agent/v1/agent_pb.ts";
import type { ApprovalPlan } from "../../agent/agent-commands.ts";
import type { AgentRecord, JsonObject, JsonValue } from "../../agent/agent-store.ts";
import { cursorOf } from "../../events/agent-event-watch.ts";
import type { LoggedEvent } from "../../events/event-log.ts";
import type { KindWatch } from "../../kinds/agent-kind.ts";
import type { RunRecord } from "../../scheduler/run-store.ts";

/**
 * An event of the log as callers see it; `data` holds what its writer put there (see
 * announcing-agent-store.ts and run-announcer.ts).
 */
export function agentEvent(event: LoggedEvent) {
  const run = event.data?.run;
  const failureReason = event.data?.failureReason;
  const trigger = event.data?.trigger;
  return create(AgentEventSchema, {
    cursor: cursorOf(event),
    type: event.type,
    agentId: event.agentId,
    at: timestampFromDate(event.at),
    ...(isObject(run) ? { run: runMessage(event.agentId, run) } : {}),
    ...(typeof failureReason === "string" ? { failureReason } : {}),
    ...(isObject(trigger) ? { trigger: triggerFiring(trigger) } : {}),
  });
}

function runMessage(agentId: string, run: JsonObject) {
  const time = (value: JsonValue | undefined) =>
    typeof value === "string" ? { value: timestampFromDate(new Date(value)) } : undefined;
  const scheduledAt = time(run.scheduledAt);
  const startedAt = time(run.startedAt);
  const finishedAt = time(run.finishedAt);
  return create(AgentRunSchema, {
    runId: typeof run.runId === "string" ? run.runId : "",
    agentId,
    attempt: typeof run.attempt === "number" ? run.attempt : 0,
    outcome: typeof run.outcome === "string" ? run.outcome : "",
    ...(scheduledAt === undefined ? {} : { scheduledAt: scheduledAt.value }),
    ...(startedAt === undefined ? {} : { startedAt: startedAt.value }),
    ...(finishedAt === undefined ? {} : { finishedAt: finishedAt.value }),
    ...(isObject(run.result) ? { result: run.result } : {}),
    ...(typeof run.error === "string" ? { error: run.error } : {}),
  });
}

function isObject(value: JsonValue | undefined): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

export const noticeOf = (notice: string | undefined) => (notice === undefined ? {} : { notice });

/** A trigger order's firing, as the event and the agent carry it. */
function triggerFiring(firing: NonNullable<KindWatch["firing"]> | JsonObject) {
  const observations = Array.isArray(firing.observations) ? firing.observations : [];
  return create(TriggerFiringSchema, {
    leg: String(firing.leg),
    referencePriceUsd: Number(firing.referencePriceUsd),
    observations: observations.flatMap((o) =>
      o !== null && typeof o === "object" && !Array.isArray(o)
        ? [
            create(PriceObservationSchema, {
              priceUsd: Number(o.priceUsd),
              at: timestampFromDate(new Date(String(o.at))),
            }),
          ]
        : [],
    ),
    firedAt: timestampFromDate(new Date(String(firing.firedAt))),
  });
}

function triggerWatch(watch: KindWatch) {
  return create(TriggerWatchSchema, {
    ...(watch.lastPriceUsd === undefined ? {} : { lastPriceUsd: watch.lastPriceUsd }),
    ...(watch.lastSeenAt === undefined ? {} : { lastSeenAt: timestampFromDate(watch.lastSeenAt) }),
    ...(watch.firing === undefined ? {} : { firing: triggerFiring(watch.firing) }),
  });
}

export function agentDetail(agent: AgentRecord, pendingReason?: string, notice?: string, watch?: KindWatch) {
  return create(AgentSchema, {
    agentId: agent.agentId,
    type: agent.type,
    status: agent.status,
    config: agent.config,
    createdAt: timestampFromDate(agent.createdAt),
    ...(agent.lastRunAt === undefined ? {} : { lastRunAt: timestampFromDate(agent.lastRunAt) }),
    ...(agent.nextRunAt === undefined ? {} : { nextRunAt: timestampFromDate(agent.nextRunAt) }),
    ...(agent.failureReason === undefined ? {} : { failureReason: agent.failureReason }),
    ...(pendingReason === undefined ? {} : { pendingReason }),
    ...noticeOf(notice),
    ...(watch === undefined ? {} : { trigger: triggerWatch(watch) }),
  });
}

/** A run of the history. */
export function agentRun(run: RunRecord) {
  return create(AgentRunSchema, {
    runId: run.runId,
    agentId: run.agentId,
    scheduledAt: timestampFromDate(run.scheduledAt),
    attempt: run.attempt,
    startedAt: timestampFromDate(run.startedAt),
    finishedAt: timestampFromDate(run.finishedAt),
    outcome: run.outcome,
    ...(run.result === undefined ? {} : { result: run.result }),
    ...(run.error === undefined ? {} : { error: run.error }),
  });
}

/** An agent as ListAgents lists it. */
export function agentSummary(agent: AgentRecord) {
  return create(AgentSummarySchema, {
    agentId: agent.agentId,
    type: agent.type,
    status: agent.status,
    createdAt: timestampFromDate(agent.createdAt),
  });
}

/** PrepareApproval's data: the unsigned approval, and what the agents sharing it need. */
export function approvalData(approval: ApprovalPlan) {
  return {
    transaction: approval.transaction,
    owner: approval.owner,
    delegate: approval.delegate,
    mint: approval.mint,
    tokenAccount: approval.tokenAccount,
    allowance: approval.allowance.toString(),
    decimals: approval.decimals,
    lastValidBlockHeight: approval.lastValidBlockHeight.toString(),
    neededPerDay: approval.neededPerDay.toString(),
    sharedBy: approval.sharedBy,
    createsAccounts: [...approval.createsAccounts],
  };
}

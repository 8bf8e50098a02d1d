import { create, toJson } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import {
  AgentEventSchema,
  AgentRunSchema,
  AgentSchema,
  type AgentService,
  AgentSummarySchema,
  CreateAgentResponseSchema,
  DeleteAgentResponseSchema,
  GetAgentResponseSchema,
  GetExecutorResponseSchema,
  ListAgentRunsResponseSchema,
  ListAgentsResponseSchema,
  PauseAgentResponseSchema,
  PrepareApprovalResponseSchema,
  ResumeAgentResponseSchema,
  WatchAgentEventsResponseSchema,
} from "../../gen/agent/v1/agent_pb.ts";
import type { AgentCommands } from "../agent/agent-commands.ts";
import type { AgentRecord, JsonObject, JsonValue } from "../agent/agent-store.ts";
import { type AgentEventWatch, cursorOf } from "../events/agent-event-watch.ts";
import type { LoggedEvent } from "../events/event-log.ts";
import { callerCapsKey, principalKey } from "./principal.ts";
import { type StreamSettings, serveStream } from "./server-stream.ts";

/** Header (gRPC metadata) that makes CreateAgent safe to retry. */
export const IDEMPOTENCY_KEY_HEADER = "idempotency-key";

/** AgentService over the agent commands: protobuf in, domain values across, protobuf out. */
export function createAgentService(options: {
  commands: AgentCommands;
  /** WatchAgentEvents: the event watch, and the limits every stream shares. */
  events?: AgentEventWatch;
  streams?: StreamSettings;
}): ServiceImpl<typeof AgentService> {
  const { commands } = options;
  return {
    async createAgent(req, ctx) {
      const agent = await commands.create(
        ctx.values.get(principalKey),
        {
          type: req.type,
          config: req.config,
          idempotencyKey: ctx.requestHeader.get(IDEMPOTENCY_KEY_HEADER) ?? "",
        },
        ctx.values.get(callerCapsKey),
      );
      return create(CreateAgentResponseSchema, {
        success: true,
        data: {
          agentId: agent.agentId,
          status: agent.status,
          createdAt: timestampFromDate(agent.createdAt),
          ...noticeOf(commands.notice?.(agent)),
        },
      });
    },

    watchAgentEvents(req, ctx) {
      const { events, streams } = options;
      if (events === undefined || streams === undefined) {
        throw new ConnectError("agent events are not served by this server", Code.Unimplemented);
      }
      const owner = ctx.values.get(principalKey);
      return serveStream(streams, ctx, {
        rpc: "WatchAgentEvents",
        start: (queue) => events.start(owner, { agentId: req.agentId, after: req.after }, queue),
        message: (event) =>
          create(WatchAgentEventsResponseSchema, { success: true, data: agentEvent(event) }),
        heartbeat: create(WatchAgentEventsResponseSchema, { success: true, heartbeat: true }),
        cursorOf,
        openWithHeartbeat: true,
      });
    },

    async getAgent(req, ctx) {
      const agent = await commands.get(ctx.values.get(principalKey), req.agentId, { signal: ctx.signal });
      return create(GetAgentResponseSchema, {
        success: true,
        data: agentDetail(agent, commands.pendingReason(agent), commands.notice?.(agent)),
      });
    },

    async deleteAgent(req, ctx) {
      const deleted = await commands.delete(ctx.values.get(principalKey), req.agentId);
      return create(DeleteAgentResponseSchema, { success: true, data: { deleted } });
    },

    async pauseAgent(req, ctx) {
      const agent = await commands.pause(ctx.values.get(principalKey), req.agentId);
      return create(PauseAgentResponseSchema, { success: true, data: agentDetail(agent) });
    },

    async resumeAgent(req, ctx) {
      const agent = await commands.resume(ctx.values.get(principalKey), req.agentId);
      return create(ResumeAgentResponseSchema, { success: true, data: agentDetail(agent) });
    },

    async listAgentRuns(req, ctx) {
      const page = await commands.listRuns(ctx.values.get(principalKey), req.agentId, {
        limit: req.limit,
        offset: req.offset,
      });
      return create(ListAgentRunsResponseSchema, {
        success: true,
        data: {
          runs: page.runs.map((run) =>
            create(AgentRunSchema, {
              runId: run.runId,
              agentId: run.agentId,
              scheduledAt: timestampFromDate(run.scheduledAt),
              attempt: run.attempt,
              startedAt: timestampFromDate(run.startedAt),
              finishedAt: timestampFromDate(run.finishedAt),
              outcome: run.outcome,
              ...(run.result === undefined ? {} : { result: run.result }),
              ...(run.error === undefined ? {} : { error: run.error }),
            }),
          ),
          total: page.total,
          limit: page.limit,
          offset: page.offset,
        },
      });
    },

    getExecutor() {
      return create(GetExecutorResponseSchema, {
        success: true,
        data: { address: commands.executor(), delegation: DELEGATION },
      });
    },

    async prepareApproval(req, ctx) {
      const approval = await commands.prepareApproval(
        ctx.values.get(principalKey),
        req.agentId,
        req.allowance,
        ctx.signal,
      );
      return create(PrepareApprovalResponseSchema, {
        success: true,
        data: {
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
        },
      });
    },

    async listAgents(req, ctx) {
      const page = await commands.list(ctx.values.get(principalKey), {
        type: req.type,
        status: req.status,
        limit: req.limit,
        offset: req.offset,
        ...(req.pageToken === undefined ? {} : { pageToken: req.pageToken }),
        signal: ctx.signal,
      });
      return create(ListAgentsResponseSchema, {
        success: true,
        data: {
          agents: page.agents.map((a) =>
            create(AgentSummarySchema, {
              agentId: a.agentId,
              type: a.type,
              status: a.status,
              createdAt: timestampFromDate(a.createdAt),
            }),
          ),
          total: page.total,
          limit: page.limit,
          offset: page.offset,
          ...(page.nextPageToken === undefined ? {} : { nextPageToken: page.nextPageToken }),
        },
      });
    },
  };
}

/** An event as its JSON (what webhook bodies carry in `data`), the same as streams show it. */
export function agentEventJson(event: LoggedEvent): JsonValue {
  return toJson(AgentEventSchema, agentEvent(event)) as JsonValue;
}

/** An event of the log as callers see it; `data` holds what its writer put there (see agent-event-type). */
function agentEvent(event: LoggedEvent) {
  const run = event.data?.run;
  const failureReason = event.data?.failureReason;
  return create(AgentEventSchema, {
    cursor: cursorOf(event),
    type: event.type,
    agentId: event.agentId,
    at: timestampFromDate(event.at),
    ...(isObject(run) ? { run: runMessage(event.agentId, run) } : {}),
    ...(typeof failureReason === "string" ? { failureReason } : {}),
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

/** GetExecutor's word on delegation. */
const DELEGATION =
  "Delegates are per owner and wallet: this address only pays fees. The key that moves a wallet's tokens is derived for one (owner, wallet) pair; PrepareApproval names it, and an approval serves that owner's agents alone.";

const noticeOf = (notice: string | undefined) => (notice === undefined ? {} : { notice });

function agentDetail(agent: AgentRecord, pendingReason?: string, notice?: string) {
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
  });
}

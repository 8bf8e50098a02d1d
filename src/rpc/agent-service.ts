import { create, toJson } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import {
  AgentEventSchema,
  type AgentService,
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
import type { JsonValue } from "../agent/agent-store.ts";
import { type AgentEventWatch, cursorOf } from "../events/agent-event-watch.ts";
import type { LoggedEvent } from "../events/event-log.ts";
import {
  agentDetail,
  agentEvent,
  agentRun,
  agentSummary,
  approvalData,
  noticeOf,
} from "./messages/agent-messages.ts";
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
        data: agentDetail(
          agent,
          commands.pendingReason(agent),
          commands.notice?.(agent),
          commands.watch?.(agent),
        ),
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
          runs: page.runs.map(agentRun),
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
        data: approvalData(approval),
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
          agents: page.agents.map(agentSummary),
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

/** GetExecutor's word on delegation. */
const DELEGATION =
  "Delegates are per owner and wallet: this address only pays fees. The key that moves a wallet's tokens is derived for one (owner, wallet) pair; PrepareApproval names it, and an approval serves that owner's agents alone.";

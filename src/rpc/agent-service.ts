import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import {
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
} from "../../gen/agent/v1/agent_pb.ts";
import type { AgentCommands } from "../agent/agent-commands.ts";
import type { AgentRecord } from "../agent/agent-store.ts";
import { principalKey } from "./principal.ts";

/** Header (gRPC metadata) that makes CreateAgent safe to retry. */
export const IDEMPOTENCY_KEY_HEADER = "idempotency-key";

/** AgentService over the agent commands: protobuf in, domain values across, protobuf out. */
export function createAgentService(options: { commands: AgentCommands }): ServiceImpl<typeof AgentService> {
  const { commands } = options;
  return {
    async createAgent(req, ctx) {
      const agent = await commands.create(ctx.values.get(principalKey), {
        type: req.type,
        config: req.config,
        idempotencyKey: ctx.requestHeader.get(IDEMPOTENCY_KEY_HEADER) ?? "",
      });
      return create(CreateAgentResponseSchema, {
        success: true,
        data: { agentId: agent.agentId, status: agent.status, createdAt: timestampFromDate(agent.createdAt) },
      });
    },

    // biome-ignore lint/correctness/useYield: replaced by the event stream in the next commit
    async *watchAgentEvents() {
      throw new ConnectError("not yet served", Code.Unimplemented);
    },

    async getAgent(req, ctx) {
      const agent = await commands.get(ctx.values.get(principalKey), req.agentId, { signal: ctx.signal });
      return create(GetAgentResponseSchema, { success: true, data: agentDetail(agent) });
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
      return create(GetExecutorResponseSchema, { success: true, data: { address: commands.executor() } });
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

function agentDetail(agent: AgentRecord) {
  return create(AgentSchema, {
    agentId: agent.agentId,
    type: agent.type,
    status: agent.status,
    config: agent.config,
    createdAt: timestampFromDate(agent.createdAt),
    ...(agent.lastRunAt === undefined ? {} : { lastRunAt: timestampFromDate(agent.lastRunAt) }),
    ...(agent.nextRunAt === undefined ? {} : { nextRunAt: timestampFromDate(agent.nextRunAt) }),
    ...(agent.failureReason === undefined ? {} : { failureReason: agent.failureReason }),
  });
}

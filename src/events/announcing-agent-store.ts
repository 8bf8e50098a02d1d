import type { AgentRecord, AgentStatus, AgentStore } from "../agent/agent-store.ts";
import type { EventLog, NewEvent } from "./event-log.ts";

/** The lifecycle event a status change is, or undefined for a change that announces nothing. */
export function agentEventTypeOf(before: AgentStatus, after: AgentStatus): string | undefined {
  if (before === after) return undefined;
  if (after === "failed") return "agent.failed";
  if (after === "paused") return "agent.paused";
  if (after === "active") return before === "pending" ? "agent.activated" : "agent.resumed";
  return undefined;
}

/**
 * The agent store, announcing each change it made in the event log: agent.created, the status
 * changes (activated, paused, resumed, failed) and agent.deleted. Every writer of agents (the
 * commands, the scheduler) goes through the store, so every change is announced, by whichever
 * replica made it, and only changes that happened: the event is appended after the store has
 * made the change, with the status the change found (`update` calls its `change` again when it
 * loses a race, so the last call is the one that landed).
 *
 * An append that fails (the log's database hiccups) does not undo the change or fail the call:
 * it is reported to `onError`, and the event is missing. A process that dies between a change
 * and its append loses that event too. Both are the price of two writes without a transaction;
 * see the README's streams section.
 */
export function createAnnouncingAgentStore(options: {
  readonly store: AgentStore;
  readonly log: EventLog;
  readonly now?: () => Date;
  readonly onError?: (error: unknown) => void;
}): AgentStore {
  const { store, log } = options;
  const now = options.now ?? (() => new Date());
  const announce = async (event: NewEvent) => {
    try {
      await log.append(event);
    } catch (error) {
      options.onError?.(error);
    }
  };
  return {
    async create(agent) {
      const result = await store.create(agent);
      if (result.created) {
        const { agentId, owner, createdAt } = result.agent;
        await announce({ type: "agent.created", owner, agentId, at: createdAt, key: `${agentId}:created` });
      }
      return result;
    },
    async update(owner, agentId, change) {
      let before: AgentRecord | undefined;
      const after = await store.update(owner, agentId, (current) => {
        before = current;
        return change(current);
      });
      const type =
        after === undefined || before === undefined
          ? undefined
          : agentEventTypeOf(before.status, after.status);
      if (after !== undefined && type !== undefined) {
        const at = now();
        await announce({
          type,
          owner,
          agentId,
          at,
          // One change, one key: the status it reached and when.
          key: `${agentId}:${after.status}:${at.getTime()}`,
          ...(type === "agent.failed" && after.failureReason !== undefined
            ? { data: { failureReason: after.failureReason } }
            : {}),
        });
      }
      return after;
    },
    async delete(owner, agentId) {
      const deleted = await store.delete(owner, agentId);
      if (deleted) {
        await announce({ type: "agent.deleted", owner, agentId, at: now(), key: `${agentId}:deleted` });
      }
      return deleted;
    },
    get: (owner, agentId, readOptions) => store.get(owner, agentId, readOptions),
    list: (owner, query) => store.list(owner, query),
    due: (at, limit) => store.due(at, limit),
    ping: () => store.ping(),
    close: () => store.close(),
  };
}

import type { AgentStatus, AgentStore, JsonObject } from "../agent/agent-store.ts";
import type { EventLog, NewEvent } from "./event-log.ts";

/** The lifecycle event a status change is, or undefined for a change that announces nothing. */
export function agentEventTypeOf(before: AgentStatus, after: AgentStatus): string | undefined {
  if (before === after) return undefined;
  if (after === "failed") return "agent.failed";
  if (after === "paused") return "agent.paused";
  if (after === "active") return before === "pending" ? "agent.activated" : "agent.resumed";
  if (after === "completed") return "agent.completed";
  if (after === "expired") return "agent.expired";
  return undefined;
}

/** The event of a status change, as the writer and the repair both make it (one key). */
export function statusEvent(
  owner: string,
  agentId: string,
  announced: { readonly type: string; readonly at: Date; readonly data?: JsonObject },
  failureReason: string | undefined,
): NewEvent {
  return {
    type: announced.type,
    owner,
    agentId,
    at: announced.at,
    key: `${agentId}:${announced.type}:${announced.at.getTime()}`,
    ...(announced.type === "agent.failed" && failureReason !== undefined ? { data: { failureReason } } : {}),
    ...(announced.data === undefined ? {} : { data: announced.data }),
  };
}

/** The events of a creation and a deletion, as the writer and the repair both make them. */
export const createdEvent = (owner: string, agentId: string, at: Date): NewEvent => ({
  type: "agent.created",
  owner,
  agentId,
  at,
  key: `${agentId}:created`,
});
export const deletedEvent = (owner: string, agentId: string, at: Date): NewEvent => ({
  type: "agent.deleted",
  owner,
  agentId,
  at,
  key: `${agentId}:deleted`,
});

/**
 * The agent store, announcing each change it made in the event log: agent.created, the status
 * changes (activated, paused, resumed, failed) and agent.deleted. Every writer of agents (the
 * commands, the scheduler) goes through the store, so every change is announced, by whichever
 * replica made it, and only changes that happened: the event is appended after the store has
 * made the change, with the status the change found (`update` calls its `change` again when it
 * loses a race, so the last call is the one that landed).
 *
 * An append that fails (the log's database hiccups) does not undo the change or fail the call:
 * it is reported to `onError`. That event, and the event of a change whose process died before
 * appending, is appended later by the repair (mongo-event-repair.ts), from what the change wrote:
 * a status change carries its event (`announced`), a deletion leaves a tombstone, a creation its
 * agent. In memory nothing outlives the process and an append cannot fail, so none is needed.
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
        await announce(createdEvent(owner, agentId, createdAt));
      }
      return result;
    },
    async update(owner, agentId, change, updateOptions) {
      // `change` runs again when the store loses a race; the last run is the change that landed.
      let announced: { type: string; at: Date; data?: JsonObject } | undefined;
      const after = await store.update(
        owner,
        agentId,
        (current) => {
          const changed = change(current);
          if (changed === undefined) {
            announced = undefined;
            return undefined;
          }
          const { announce, ...patch } = changed;
          const type =
            (patch.status === undefined ? undefined : agentEventTypeOf(current.status, patch.status)) ??
            announce?.type;
          announced =
            type === undefined
              ? undefined
              : { type, at: now(), ...(announce?.data === undefined ? {} : { data: announce.data }) };
          // The event goes into the change itself, so a change whose append never happened can be
          // found and announced later (see mongo-event-repair.ts).
          return announced === undefined ? patch : { ...patch, announced };
        },
        updateOptions,
      );
      if (after !== undefined && announced !== undefined) {
        await announce(statusEvent(owner, agentId, announced, after.failureReason));
      }
      return after;
    },
    async delete(owner, agentId) {
      const deleted = await store.delete(owner, agentId);
      if (deleted) {
        await announce(deletedEvent(owner, agentId, now()));
      }
      return deleted;
    },
    get: (owner, agentId, readOptions) => store.get(owner, agentId, readOptions),
    list: (owner, query) => store.list(owner, query),
    due: (at, limit) => store.due(at, limit),
    pending: (after, limit) => store.pending(after, limit),
    watching: (type, after, limit) => store.watching(type, after, limit),
    countOf: (owner) => store.countOf(owner),
    newestPending: (limit) => store.newestPending(limit),
    ping: () => store.ping(),
    close: () => store.close(),
  };
}

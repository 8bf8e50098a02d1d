import { InvalidArgumentError, NotFoundError } from "../domain/errors.ts";
import type { SubscriberQueue } from "../streams/subscriber-queue.ts";
import type { EventFeed, EventWatch } from "./event-feed.ts";
import type { LoggedEvent } from "./event-log.ts";

/** Empty strings mean "not given", as proto3 strings have no presence. */
export interface WatchAgentEventsInput {
  readonly agentId: string;
  readonly after: string;
}

export interface AgentEventWatch {
  /**
   * Starts feeding `queue` with the owner's events (one agent's, when `agentId` is given) after
   * the cursor `after`, or from now on. invalid_argument for a malformed cursor or id; not_found
   * for an agent the owner does not have; out_of_range for a cursor outside the kept events.
   */
  start(
    owner: string,
    input: WatchAgentEventsInput,
    queue: SubscriberQueue<LoggedEvent>,
  ): Promise<EventWatch>;
}

/** Cursors are decimal sequence numbers; 15 digits stay exact in a double. */
const CURSOR = /^[0-9]{1,15}$/;
/** As agent ids elsewhere: ids are 22 characters, so anything far longer is not one. */
const MAX_AGENT_ID_LENGTH = 128;

/** The rules of WatchAgentEvents, free of transport: what a caller may watch, and from where. */
export function createAgentEventWatch(options: {
  readonly feed: EventFeed;
  /** Whether the owner has the agent now. */
  readonly agentExists: (owner: string, agentId: string) => Promise<boolean>;
}): AgentEventWatch {
  return {
    async start(owner, input, queue) {
      if (input.after !== "" && !CURSOR.test(input.after)) {
        throw InvalidArgumentError.field(
          "after",
          "must be a cursor of an event this service sent (its digits)",
        );
      }
      if (input.agentId.length > MAX_AGENT_ID_LENGTH) {
        throw InvalidArgumentError.field("agentId", `must be at most ${MAX_AGENT_ID_LENGTH} characters`);
      }
      // Another owner's agent is as unknown as a missing one.
      if (input.agentId !== "" && !(await options.agentExists(owner, input.agentId))) {
        throw new NotFoundError(`agent ${input.agentId} not found`);
      }
      return options.feed.watch({
        filter: input.agentId === "" ? { owner } : { owner, agentId: input.agentId },
        ...(input.after === "" ? {} : { after: Number(input.after) }),
        queue,
      });
    },
  };
}

/** The cursor of an event, as callers see it. */
export const cursorOf = (event: LoggedEvent): string => String(event.seq);

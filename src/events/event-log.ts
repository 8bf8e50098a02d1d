import type { JsonObject } from "../agent/agent-store.ts";

/**
 * The agent event log: every lifecycle change and run of every agent, in one order that all
 * replicas share. Watchers (WatchAgentEvents) and webhook deliveries read it by cursor: an event's
 * `seq` is its place in the log, and the log's sequence is dense (1, 2, 3, ...) and visible as a
 * prefix: when a reader sees `seq` n, it has already been able to see every event before n. A
 * reader that asks for the events after its cursor therefore never skips one that shows up later,
 * which is what makes "replay, then live" free of gaps and duplicates.
 */
export interface NewEvent {
  /** What happened: `agent.created`, `run.succeeded`, ... */
  readonly type: string;
  readonly owner: string;
  readonly agentId: string;
  readonly at: Date;
  /**
   * What the event announces, unique in the log (`<agentId>:v<version>`, `<runId>:finished`): a
   * second append of the same key is the first one, so a writer may append again after a crash.
   */
  readonly key: string;
  /** Event data beyond the envelope (a run's outcome and result). */
  readonly data?: JsonObject;
}

export interface LoggedEvent extends NewEvent {
  /** The event's place in the log: 1 for the first event ever, then one more for each. */
  readonly seq: number;
}

/** Which events a reader wants: one owner's, and, optionally, one agent's. */
export interface EventFilter {
  readonly owner?: string;
  readonly agentId?: string;
}

export interface EventLog {
  /** Appends an event once per key; resolves with the logged event (the earlier one for a key already logged). */
  append(event: NewEvent): Promise<LoggedEvent>;
  /** Up to `limit` events after `seq` that match `filter`, in log order. */
  after(seq: number, limit: number, filter?: EventFilter): Promise<readonly LoggedEvent[]>;
  /** Which of `keys` are logged (for the repair of missing events). */
  loggedKeys(keys: readonly string[]): Promise<ReadonlySet<string>>;
  /** The first `seq` still kept (older ones were pruned), or undefined when the log is empty. */
  firstSeq(): Promise<number | undefined>;
  /** The last `seq` logged, 0 when the log is empty. */
  lastSeq(): Promise<number>;
  /** Drops the events logged before `before`, never the last one (its `seq` carries the sequence on). */
  prune(before: Date): Promise<number>;
  close(): Promise<void>;
}

/** Every event type the log holds: what WatchAgentEvents streams and webhooks deliver. */
export const AGENT_EVENT_TYPES: readonly string[] = [
  "agent.created",
  "agent.activated",
  "agent.paused",
  "agent.resumed",
  "agent.failed",
  "agent.completed",
  "agent.expired",
  "agent.deleted",
  "trigger.fired",
  "run.started",
  "run.succeeded",
  "run.skipped",
  "run.failed",
];

import type { EventLog, LoggedEvent } from "../events/event-log.ts";
import type { DeliveryRecord, EndpointRecord, WebhookStore } from "./webhook-store.ts";

export interface WebhookFanout {
  /**
   * Enqueues the deliveries of the next page of events: `fresh` are those this call enqueued
   * (another replica may have enqueued the rest); `more`: another page is waiting.
   */
  step(): Promise<{ fresh: readonly DeliveryRecord[]; more: boolean }>;
}

/** The id of an event's delivery to an endpoint, and the `webhook-id` of its every attempt. */
export function deliveryIdOf(endpointId: string, seq: number): string {
  return `msg_${endpointId.replace(/^ep_/, "")}_${seq}`;
}

/**
 * Turns events into deliveries: reads the event log after the shared cursor, makes one delivery
 * per event and subscribed endpoint (events after the endpoint was made, of the types it asked
 * for), enqueues them, and only then moves the cursor. Every replica may run it: deliveries are
 * enqueued once per id, and a replica that dies between enqueueing and moving the cursor leaves
 * the page to be enqueued again, which adds nothing. The first run starts at the log's end: an
 * outbox begins with the events after it existed.
 */
export function createWebhookFanout(options: {
  readonly store: WebhookStore;
  readonly log: EventLog;
  /** The `data` of an event's body: the event as the API shows it. */
  readonly render: (event: LoggedEvent) => unknown;
  readonly pageSize?: number;
  readonly now?: () => Date;
}): WebhookFanout {
  const { store, log, render } = options;
  const pageSize = options.pageSize ?? 500;
  const now = options.now ?? (() => new Date());
  const wants = (endpoint: EndpointRecord, event: LoggedEvent) =>
    endpoint.owner === event.owner &&
    event.seq > endpoint.fromSeq &&
    (endpoint.eventTypes.length === 0 || endpoint.eventTypes.includes(event.type));
  return {
    async step() {
      let cursor = await store.cursor();
      if (cursor === undefined) {
        await store.advanceCursor(await log.lastSeq());
        return { fresh: [], more: false };
      }
      // With no endpoint listening, the log is not read at all (on FerretDB a read scans it);
      // events before the earliest endpoint's start are nobody's, so the cursor skips them.
      const earliest = await store.earliestSubscription();
      if (earliest === undefined) return { fresh: [], more: false };
      if (earliest > cursor) {
        await store.advanceCursor(earliest);
        cursor = earliest;
      }
      const events = await log.after(cursor, pageSize);
      const last = events.at(-1);
      if (last === undefined) return { fresh: [], more: false };
      const endpoints = await store.subscribers([...new Set(events.map((e) => e.owner))]);
      const created = now();
      const deliveries: DeliveryRecord[] = [];
      for (const event of events) {
        let payload: string | undefined;
        for (const endpoint of endpoints) {
          if (!wants(endpoint, event)) continue;
          payload ??= JSON.stringify({
            type: event.type,
            timestamp: event.at.toISOString(),
            data: render(event),
          });
          deliveries.push({
            deliveryId: deliveryIdOf(endpoint.endpointId, event.seq),
            endpointId: endpoint.endpointId,
            owner: event.owner,
            eventSeq: event.seq,
            eventType: event.type,
            eventAt: event.at,
            payload,
            createdAt: created,
            status: "pending",
            attempts: 0,
            lastResponseCode: 0,
            nextAttemptAt: created,
            windowStart: event.at < created ? event.at : created,
          });
        }
      }
      const fresh = await store.enqueue(deliveries);
      await store.advanceCursor(last.seq);
      return { fresh, more: events.length === pageSize };
    },
  };
}

import { CLOCK_SKEW_ALLOWANCE_MS } from "../domain/clock-skew.ts";

/**
 * The webhook store port: endpoints, and the outbox of deliveries. Several replicas share it, on
 * MongoDB and FerretDB alike, so whatever two replicas could race on is decided by an insert of a
 * unique `_id` (FerretDB's conditional updates are not atomic):
 *
 * - A delivery's `_id` is made from its endpoint and its event: the replicas that all read an
 *   event and enqueue it for an endpoint make one delivery.
 * - Attempt n of a delivery is claimed by inserting (delivery, n) with a lease. One replica wins
 *   it; a claim whose holder crashed (its lease ran out and the delivery never recorded attempt n)
 *   is passed over by claiming n + 1. Only the holder of attempt n records it.
 */

export type DeliveryStatus = "pending" | "delivered" | "failed" | "canceled";
export const DELIVERY_STATUSES: readonly DeliveryStatus[] = ["pending", "delivered", "failed", "canceled"];

/** A signing secret: `whsec_` + base64. */
export interface EndpointSecret {
  readonly secret: string;
  readonly createdAt: Date;
  /** A replaced secret signs beside the new one until then; absent for the current one. */
  readonly expiresAt?: Date;
}

export interface EndpointRecord {
  readonly endpointId: string;
  readonly owner: string;
  readonly url: string;
  /** Empty: every type. */
  readonly eventTypes: readonly string[];
  readonly description: string;
  readonly createdAt: Date;
  /** The endpoint receives the events after this place in the event log (the last one when it was made). */
  readonly fromSeq: number;
  /** The current secret first. */
  readonly secrets: readonly EndpointSecret[];
  readonly disabledAt?: Date;
  readonly disabledReason?: string;
  /** Since when every attempt has failed; absent while healthy. */
  readonly failingSince?: Date;
}

export interface DeliveryRecord {
  /** Also the `webhook-id` of every attempt. */
  readonly deliveryId: string;
  readonly endpointId: string;
  readonly owner: string;
  readonly eventSeq: number;
  readonly eventType: string;
  /** When the event happened, for the lag from event to delivery. */
  readonly eventAt: Date;
  /** The body every attempt sends, byte for byte. */
  readonly payload: string;
  readonly createdAt: Date;
  readonly status: DeliveryStatus;
  /** Attempts recorded (begun and finished, or begun by a holder that vanished). */
  readonly attempts: number;
  /** The last answer's HTTP status; 0: none. */
  readonly lastResponseCode: number;
  readonly lastError?: string;
  readonly lastAttemptAt?: Date;
  /** When the next attempt is due, while pending. */
  readonly nextAttemptAt?: Date;
  readonly deliveredAt?: Date;
  /** Retries end `retryFor` after this: the creation, or the last resend. */
  readonly windowStart: Date;
}

/** What the holder of attempt n writes when it is done. */
export interface AttemptOutcome {
  readonly status: DeliveryStatus;
  readonly lastResponseCode: number;
  readonly lastError?: string;
  readonly lastAttemptAt: Date;
  readonly nextAttemptAt?: Date;
  readonly deliveredAt?: Date;
}

export interface Page {
  readonly limit: number;
  readonly offset: number;
}

export type EndpointHealth =
  | { readonly kind: "healthy" }
  | { readonly kind: "failing"; readonly since: Date }
  | { readonly kind: "disabled"; readonly at: Date; readonly reason: string };

export interface WebhookStore {
  /** "limit" when the owner has `maxPerOwner` endpoints already. */
  createEndpoint(record: EndpointRecord, maxPerOwner: number): Promise<"created" | "limit">;
  /** The owner's endpoint, or undefined (another owner's is as unknown as a missing one). */
  getEndpoint(owner: string, endpointId: string): Promise<EndpointRecord | undefined>;
  /** Any owner's endpoint, for deliveries. */
  endpointById(endpointId: string): Promise<EndpointRecord | undefined>;
  listEndpoints(owner: string, page: Page): Promise<{ endpoints: readonly EndpointRecord[]; total: number }>;
  /** Removes the endpoint and cancels its pending deliveries; false when it was not there. */
  deleteEndpoint(owner: string, endpointId: string): Promise<boolean>;
  /** Replaces the secrets; the endpoint as it is now, or undefined when it is gone. */
  setSecrets(
    owner: string,
    endpointId: string,
    secrets: readonly EndpointSecret[],
  ): Promise<EndpointRecord | undefined>;
  /** Records the endpoint's health; disabling also cancels its pending deliveries. */
  setHealth(endpointId: string, health: EndpointHealth): Promise<void>;
  /**
   * The earliest place in the event log an enabled endpoint wants events after (the smallest
   * `fromSeq`), or undefined when no endpoint is enabled: then no event needs reading.
   */
  earliestSubscription(): Promise<number | undefined>;
  /** The enabled endpoints of these owners (for fanning events out). */
  subscribers(owners: readonly string[]): Promise<readonly EndpointRecord[]>;
  /** Adds deliveries, once per `deliveryId`; resolves with those that were new. */
  enqueue(deliveries: readonly DeliveryRecord[]): Promise<readonly DeliveryRecord[]>;
  /**
   * Pending deliveries due at `now`, the longest waiting first; none of `excludeOwners` (owners
   * whose due deliveries could not start now: their backlog would fill the answer).
   */
  due(
    now: Date,
    limit: number,
    options?: { readonly excludeOwners?: readonly string[] },
  ): Promise<readonly DeliveryRecord[]>;
  /**
   * Claims the next attempt at a delivery read as `delivery`: its attempt number, or undefined
   * when another holder has it, or the delivery moved on since it was read.
   */
  claimAttempt(
    delivery: DeliveryRecord,
    options: { worker: string; now: Date; leaseMs: number },
  ): Promise<number | undefined>;
  /**
   * Records attempt n at `delivery` (as claimed). An outcome that keeps the delivery pending is
   * dropped when a later attempt was recorded; one that ends it (delivered, failed, canceled)
   * ends it unless it has ended already: a 2xx is the truth whenever it arrived.
   */
  finishAttempt(delivery: DeliveryRecord, attempt: number, outcome: AttemptOutcome): Promise<void>;
  getDelivery(owner: string, endpointId: string, deliveryId: string): Promise<DeliveryRecord | undefined>;
  listDeliveries(
    owner: string,
    endpointId: string,
    filter: { status?: DeliveryStatus } & Page,
  ): Promise<{ deliveries: readonly DeliveryRecord[]; total: number }>;
  /** Makes a delivery pending and due now, with a new retry window; undefined when unknown. */
  resend(
    owner: string,
    endpointId: string,
    deliveryId: string,
    now: Date,
  ): Promise<DeliveryRecord | undefined>;
  /** Where fan-out stopped: every event up to it is enqueued. Undefined before the first fan-out. */
  cursor(): Promise<number | undefined>;
  /** Moves the cursor forward (never back). */
  advanceCursor(seq: number): Promise<void>;
  /** Drops finished deliveries (and their claims) created before `before`. */
  prune(before: Date): Promise<number>;
  close(): Promise<void>;
}

/** A claim on one attempt at a delivery. */
export interface AttemptClaim {
  readonly leaseUntil: Date;
}

/** Claims in a row passed over as abandoned before a claimer gives up for this round. */
const MAX_TAKEOVERS = 8;

/**
 * The claim rule both adapters share, over their primitive operations: insert attempt n (one
 * claimer wins); if it exists, the delivery may have moved on (attempt n was recorded: read it
 * again next round), its holder may still be at it (leave it), or its holder vanished (its lease
 * ran out with attempt n unrecorded: that attempt counts as made, try n + 1).
 */
export async function claimNextAttempt(
  ops: {
    /** True when this call inserted the claim; false when it existed. */
    insertClaim(attempt: number, claim: AttemptClaim & { worker: string; at: Date }): Promise<boolean>;
    readClaim(attempt: number): Promise<AttemptClaim | undefined>;
    /** The delivery as stored now. */
    readDelivery(): Promise<DeliveryRecord | undefined>;
  },
  delivery: DeliveryRecord,
  options: { worker: string; now: Date; leaseMs: number },
): Promise<number | undefined> {
  const { now } = options;
  const leaseUntil = new Date(now.getTime() + options.leaseMs);
  for (let attempt = delivery.attempts + 1, i = 0; i < MAX_TAKEOVERS; attempt++, i++) {
    if (await ops.insertClaim(attempt, { leaseUntil, worker: options.worker, at: now })) return attempt;
    const current = await ops.readDelivery();
    if (
      current === undefined ||
      current.status !== "pending" ||
      current.attempts >= attempt ||
      (current.nextAttemptAt !== undefined && current.nextAttemptAt > now)
    ) {
      return undefined;
    }
    const claim = await ops.readClaim(attempt);
    if (claim !== undefined && claim.leaseUntil.getTime() + CLOCK_SKEW_ALLOWANCE_MS > now.getTime()) {
      return undefined;
    }
  }
  return undefined;
}

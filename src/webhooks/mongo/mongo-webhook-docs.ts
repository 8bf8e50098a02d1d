/** The webhook store's documents and their conversion from and to the domain's records. */
import type { DeliveryRecord, DeliveryStatus, EndpointRecord, EndpointSecret } from "../webhook-store.ts";

export interface EndpointDoc {
  _id: string;
  owner: string;
  url: string;
  eventTypes: string[];
  description: string;
  createdAt: Date;
  fromSeq: number;
  secrets: EndpointSecret[];
  disabledAt?: Date;
  disabledReason?: string;
  failingSince?: Date;
}

export interface DeliveryDoc {
  _id: string;
  endpointId: string;
  owner: string;
  eventSeq: number;
  eventType: string;
  eventAt: Date;
  payload: string;
  createdAt: Date;
  status: DeliveryStatus;
  attempts: number;
  lastResponseCode: number;
  lastError?: string;
  lastAttemptAt?: Date;
  nextAttemptAt?: Date;
  deliveredAt?: Date;
  windowStart: Date;
}

export interface ClaimDoc {
  /** JSON [deliveryId, attempt]. */
  _id: string;
  deliveryId: string;
  worker: string;
  at: Date;
  leaseUntil: Date;
}

export interface StateDoc {
  _id: string;
  seq: number;
}

/** The fields that have a value: the driver would store undefined as null. */
function present<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(
    Object.entries(value).filter(([, v]) => v !== undefined && v !== null),
  ) as Partial<T>;
}

export function toEndpointDoc(record: EndpointRecord): EndpointDoc {
  const { endpointId, eventTypes, secrets, ...rest } = record;
  return {
    _id: endpointId,
    ...(present(rest) as Omit<EndpointDoc, "_id" | "eventTypes" | "secrets">),
    eventTypes: [...eventTypes],
    secrets: secrets.map((s) => present(s) as EndpointSecret),
  };
}

export function endpointOf(doc: EndpointDoc | null): EndpointRecord | undefined {
  if (doc === null) return undefined;
  const { _id, ...rest } = doc;
  return {
    endpointId: _id,
    ...(present(rest) as Omit<EndpointRecord, "endpointId">),
    secrets: doc.secrets.map((s) => ({
      secret: s.secret,
      createdAt: s.createdAt,
      ...(s.expiresAt == null ? {} : { expiresAt: s.expiresAt }),
    })),
  };
}

export function toDeliveryDoc(record: DeliveryRecord): DeliveryDoc {
  const { deliveryId, ...rest } = record;
  return { _id: deliveryId, ...(present(rest) as Omit<DeliveryDoc, "_id">) };
}

export function deliveryOf(doc: DeliveryDoc): DeliveryRecord {
  const { _id, ...rest } = doc;
  return { deliveryId: _id, ...(present(rest) as Omit<DeliveryRecord, "deliveryId">) };
}

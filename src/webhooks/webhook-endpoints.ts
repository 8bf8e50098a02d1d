import {
  alternatives,
  FailedPreconditionError,
  type FieldViolation,
  InvalidArgumentError,
  NotFoundError,
  quote,
  ResourceExhaustedError,
} from "../domain/errors.ts";
import { pageLimit } from "../domain/page-limit.ts";
import { AGENT_EVENT_TYPES } from "../events/event-log.ts";
import {
  DELIVERY_STATUSES,
  type DeliveryRecord,
  type DeliveryStatus,
  type EndpointRecord,
  type WebhookStore,
} from "./webhook-store.ts";
import { checkWebhookUrl, type WebhookUrlRules } from "./webhook-url.ts";

/** Empty strings and lists mean "not given", as in proto3. */
export interface CreateEndpointInput {
  readonly url: string;
  readonly eventTypes: readonly string[];
  readonly description: string;
}

export interface ListDeliveriesInput {
  readonly status: string;
  readonly limit: number;
  readonly offset: number;
}

export interface WebhookEndpoints {
  create(owner: string, input: CreateEndpointInput): Promise<{ endpoint: EndpointRecord; secret: string }>;
  list(
    owner: string,
    page: { limit: number; offset: number },
  ): Promise<{ endpoints: readonly EndpointRecord[]; total: number; limit: number; offset: number }>;
  delete(owner: string, endpointId: string): Promise<boolean>;
  /** The new secret, and until when the one it replaces still signs. */
  rotateSecret(owner: string, endpointId: string): Promise<{ secret: string; previousExpiresAt: Date }>;
  listDeliveries(
    owner: string,
    endpointId: string,
    input: ListDeliveriesInput,
  ): Promise<{ deliveries: readonly DeliveryRecord[]; total: number; limit: number; offset: number }>;
  resend(owner: string, endpointId: string, deliveryId: string): Promise<DeliveryRecord>;
}

export interface WebhookEndpointRules extends WebhookUrlRules {
  readonly maxEndpointsPerOwner: number;
  /** How long a replaced secret keeps signing. */
  readonly secretOverlapMs: number;
}

const MAX_DESCRIPTION_LENGTH = 256;
/** Ids are 25 (endpoints) or about 40 (deliveries) characters: anything far longer is not one. */
const MAX_ID_LENGTH = 128;
const MAX_OFFSET = 1_000_000;

/** The rules of WebhookService, free of transport: what an owner may register, see and resend. */
export function createWebhookEndpoints(options: {
  readonly store: WebhookStore;
  readonly rules: WebhookEndpointRules;
  /** The event log's last place: a new endpoint receives what comes after it. */
  readonly lastEventSeq: () => Promise<number>;
  readonly newId: () => string;
  readonly newSecret: () => string;
  /** Hears of URLs refused for where they point (SSRF attempts), by range. */
  readonly onRefused?: (reason: string) => void;
  readonly now?: () => Date;
}): WebhookEndpoints {
  const { store, rules } = options;
  const now = options.now ?? (() => new Date());
  const endpointOf = async (owner: string, endpointId: string) => {
    const endpoint =
      endpointId === "" || endpointId.length > MAX_ID_LENGTH
        ? undefined
        : await store.getEndpoint(owner, endpointId);
    if (endpoint === undefined) {
      if (endpointId === "") throw InvalidArgumentError.field("endpointId", "is required");
      throw new NotFoundError(`webhook endpoint ${quote(endpointId)} not found`);
    }
    return endpoint;
  };
  const page = (limit: number, offset: number) => {
    const violations: FieldViolation[] = [];
    const applied = pageLimit(limit, violations);
    if (!Number.isInteger(offset) || offset < 0 || offset > MAX_OFFSET) {
      violations.push({
        field: "offset",
        description: `must be between 0 and ${MAX_OFFSET} but is ${offset}`,
      });
    }
    return { violations, limit: applied, offset };
  };

  return {
    async create(owner, input) {
      const violations: FieldViolation[] = [];
      try {
        checkWebhookUrl(input.url, rules, options.onRefused);
      } catch (error) {
        if (!(error instanceof InvalidArgumentError)) throw error;
        violations.push(...error.violations);
      }
      const unknown = input.eventTypes.filter((t) => !AGENT_EVENT_TYPES.includes(t));
      if (unknown.length > 0) {
        violations.push({
          field: "eventTypes",
          description: `must each be one of ${alternatives(AGENT_EVENT_TYPES)} (got ${unknown.slice(0, 3).map(quote).join(" and ")})`,
        });
      }
      if (input.description.length > MAX_DESCRIPTION_LENGTH) {
        violations.push({
          field: "description",
          description: `must be at most ${MAX_DESCRIPTION_LENGTH} characters`,
        });
      }
      if (violations.length > 0) throw new InvalidArgumentError(violations);
      const secret = options.newSecret();
      const endpoint: EndpointRecord = {
        endpointId: options.newId(),
        owner,
        url: input.url,
        eventTypes: [...new Set(input.eventTypes)],
        description: input.description,
        createdAt: now(),
        fromSeq: await options.lastEventSeq(),
        secrets: [{ secret, createdAt: now() }],
      };
      if ((await store.createEndpoint(endpoint, rules.maxEndpointsPerOwner)) === "limit") {
        throw new ResourceExhaustedError(
          `an owner may have at most ${rules.maxEndpointsPerOwner} webhook endpoints. Delete one first`,
        );
      }
      return { endpoint, secret };
    },

    async list(owner, input) {
      const { violations, limit, offset } = page(input.limit, input.offset);
      if (violations.length > 0) throw new InvalidArgumentError(violations);
      const found = await store.listEndpoints(owner, { limit, offset });
      return { ...found, limit, offset };
    },

    async delete(owner, endpointId) {
      if (endpointId === "") throw InvalidArgumentError.field("endpointId", "is required");
      if (endpointId.length > MAX_ID_LENGTH) return false;
      return store.deleteEndpoint(owner, endpointId);
    },

    async rotateSecret(owner, endpointId) {
      const endpoint = await endpointOf(owner, endpointId);
      const at = now();
      const previousExpiresAt = new Date(at.getTime() + rules.secretOverlapMs);
      const secret = options.newSecret();
      // The current secret keeps signing for the overlap; any older one stops now.
      const current = endpoint.secrets[0];
      const secrets = [
        { secret, createdAt: at },
        ...(current === undefined ? [] : [{ ...current, expiresAt: previousExpiresAt }]),
      ];
      if ((await store.setSecrets(owner, endpointId, secrets)) === undefined) {
        throw new NotFoundError(`webhook endpoint ${quote(endpointId)} not found`);
      }
      return { secret, previousExpiresAt };
    },

    async listDeliveries(owner, endpointId, input) {
      const { violations, limit, offset } = page(input.limit, input.offset);
      if (input.status !== "" && !(DELIVERY_STATUSES as readonly string[]).includes(input.status)) {
        violations.push({ field: "status", description: `must be ${alternatives(DELIVERY_STATUSES)}` });
      }
      if (violations.length > 0) throw new InvalidArgumentError(violations);
      await endpointOf(owner, endpointId);
      const found = await store.listDeliveries(owner, endpointId, {
        ...(input.status === "" ? {} : { status: input.status as DeliveryStatus }),
        limit,
        offset,
      });
      return { ...found, limit, offset };
    },

    async resend(owner, endpointId, deliveryId) {
      if (deliveryId === "") throw InvalidArgumentError.field("deliveryId", "is required");
      const endpoint = await endpointOf(owner, endpointId);
      if (endpoint.disabledAt !== undefined) {
        throw new FailedPreconditionError(
          `webhook endpoint ${quote(endpointId)} is disabled. ${endpoint.disabledReason ?? ""} Create a new one`,
        );
      }
      const resent =
        deliveryId.length > MAX_ID_LENGTH
          ? undefined
          : await store.resend(owner, endpointId, deliveryId, now());
      if (resent === undefined) {
        throw new NotFoundError(`webhook delivery ${quote(deliveryId)} not found`);
      }
      return resent;
    },
  };
}

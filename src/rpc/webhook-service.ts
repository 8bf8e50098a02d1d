import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  CreateWebhookEndpointResponseSchema,
  DeleteWebhookEndpointResponseSchema,
  ListWebhookDeliveriesResponseSchema,
  ListWebhookEndpointsResponseSchema,
  ResendWebhookDeliveryResponseSchema,
  RotateWebhookSecretResponseSchema,
  WebhookDeliverySchema,
  WebhookEndpointSchema,
  type WebhookService,
} from "../../gen/webhook/v1/webhook_pb.ts";
import type { WebhookEndpoints } from "../webhooks/webhook-endpoints.ts";
import type { DeliveryRecord, EndpointRecord } from "../webhooks/webhook-store.ts";
import { principalKey } from "./principal.ts";

/** WebhookService over the endpoint rules: the caller's principal owns what it registers. */
export function createWebhookService(options: {
  endpoints: WebhookEndpoints;
}): ServiceImpl<typeof WebhookService> {
  const { endpoints } = options;
  return {
    async createWebhookEndpoint(req, ctx) {
      const { endpoint, secret } = await endpoints.create(ctx.values.get(principalKey), {
        url: req.url,
        eventTypes: req.eventTypes,
        description: req.description,
      });
      return create(CreateWebhookEndpointResponseSchema, {
        success: true,
        data: { endpointId: endpoint.endpointId, secret, endpoint: endpointMessage(endpoint, new Date()) },
      });
    },

    async listWebhookEndpoints(req, ctx) {
      const page = await endpoints.list(ctx.values.get(principalKey), {
        limit: req.limit,
        offset: req.offset,
      });
      const now = new Date();
      return create(ListWebhookEndpointsResponseSchema, {
        success: true,
        data: {
          endpoints: page.endpoints.map((e) => endpointMessage(e, now)),
          total: page.total,
          limit: page.limit,
          offset: page.offset,
        },
      });
    },

    async deleteWebhookEndpoint(req, ctx) {
      const deleted = await endpoints.delete(ctx.values.get(principalKey), req.endpointId);
      return create(DeleteWebhookEndpointResponseSchema, { success: true, data: { deleted } });
    },

    async rotateWebhookSecret(req, ctx) {
      const rotated = await endpoints.rotateSecret(ctx.values.get(principalKey), req.endpointId);
      return create(RotateWebhookSecretResponseSchema, {
        success: true,
        data: {
          secret: rotated.secret,
          previousSecretExpiresAt: timestampFromDate(rotated.previousExpiresAt),
        },
      });
    },

    async listWebhookDeliveries(req, ctx) {
      const page = await endpoints.listDeliveries(ctx.values.get(principalKey), req.endpointId, {
        status: req.status,
        limit: req.limit,
        offset: req.offset,
      });
      return create(ListWebhookDeliveriesResponseSchema, {
        success: true,
        data: {
          deliveries: page.deliveries.map(deliveryMessage),
          total: page.total,
          limit: page.limit,
          offset: page.offset,
        },
      });
    },

    async resendWebhookDelivery(req, ctx) {
      const delivery = await endpoints.resend(ctx.values.get(principalKey), req.endpointId, req.deliveryId);
      return create(ResendWebhookDeliveryResponseSchema, { success: true, data: deliveryMessage(delivery) });
    },
  };
}

function endpointMessage(endpoint: EndpointRecord, now: Date) {
  const previous = endpoint.secrets.find((s) => s.expiresAt !== undefined && s.expiresAt > now);
  return create(WebhookEndpointSchema, {
    endpointId: endpoint.endpointId,
    url: endpoint.url,
    eventTypes: [...endpoint.eventTypes],
    description: endpoint.description,
    createdAt: timestampFromDate(endpoint.createdAt),
    status: endpoint.disabledAt === undefined ? "enabled" : "disabled",
    ...(endpoint.disabledReason === undefined ? {} : { disabledReason: endpoint.disabledReason }),
    ...(endpoint.disabledAt === undefined ? {} : { disabledAt: timestampFromDate(endpoint.disabledAt) }),
    ...(endpoint.failingSince === undefined
      ? {}
      : { failingSince: timestampFromDate(endpoint.failingSince) }),
    ...(previous?.expiresAt === undefined
      ? {}
      : { previousSecretExpiresAt: timestampFromDate(previous.expiresAt) }),
  });
}

function deliveryMessage(delivery: DeliveryRecord) {
  const time = (at: Date | undefined) => (at === undefined ? undefined : timestampFromDate(at));
  return create(WebhookDeliverySchema, {
    deliveryId: delivery.deliveryId,
    endpointId: delivery.endpointId,
    eventType: delivery.eventType,
    eventCursor: String(delivery.eventSeq),
    status: delivery.status,
    attempts: delivery.attempts,
    lastResponseCode: delivery.lastResponseCode,
    ...(delivery.lastError === undefined ? {} : { lastError: delivery.lastError }),
    createdAt: timestampFromDate(delivery.createdAt),
    lastAttemptAt: time(delivery.lastAttemptAt),
    nextAttemptAt: delivery.status === "pending" ? time(delivery.nextAttemptAt) : undefined,
    deliveredAt: time(delivery.deliveredAt),
  });
}

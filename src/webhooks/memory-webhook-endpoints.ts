/** The memory webhook store's endpoints: their records, secrets and health. */
import type { EndpointRecord, WebhookStore } from "./webhook-store.ts";

export interface MemoryWebhookEndpointsOptions {
  /** The store's endpoints by id. */
  readonly endpoints: Map<string, EndpointRecord>;
  /** Ends an endpoint's pending deliveries (deleted or disabled). */
  readonly cancelPending: (endpointId: string) => void;
}

export type MemoryWebhookEndpoints = Pick<
  WebhookStore,
  | "createEndpoint"
  | "getEndpoint"
  | "endpointById"
  | "listEndpoints"
  | "deleteEndpoint"
  | "setSecrets"
  | "setHealth"
  | "earliestSubscription"
  | "subscribers"
>;

export function createMemoryWebhookEndpoints(options: MemoryWebhookEndpointsOptions): MemoryWebhookEndpoints {
  const { endpoints, cancelPending } = options;
  const ownEndpoint = (owner: string, endpointId: string) => {
    const endpoint = endpoints.get(endpointId);
    return endpoint?.owner === owner ? endpoint : undefined;
  };
  const newestFirst = (a: EndpointRecord, b: EndpointRecord) => b.createdAt.getTime() - a.createdAt.getTime();
  return {
    async createEndpoint(record, maxPerOwner) {
      let count = 0;
      for (const e of endpoints.values()) if (e.owner === record.owner) count++;
      if (count >= maxPerOwner) return "limit";
      endpoints.set(record.endpointId, record);
      return "created";
    },
    async getEndpoint(owner, endpointId) {
      return ownEndpoint(owner, endpointId);
    },
    async endpointById(endpointId) {
      return endpoints.get(endpointId);
    },
    async listEndpoints(owner, page) {
      const all = [...endpoints.values()].filter((e) => e.owner === owner).sort(newestFirst);
      return { endpoints: all.slice(page.offset, page.offset + page.limit), total: all.length };
    },
    async deleteEndpoint(owner, endpointId) {
      if (ownEndpoint(owner, endpointId) === undefined) return false;
      endpoints.delete(endpointId);
      cancelPending(endpointId);
      return true;
    },
    async setSecrets(owner, endpointId, secrets) {
      const endpoint = ownEndpoint(owner, endpointId);
      if (endpoint === undefined) return undefined;
      const updated = { ...endpoint, secrets: [...secrets] };
      endpoints.set(endpointId, updated);
      return updated;
    },
    async setHealth(endpointId, health) {
      const endpoint = endpoints.get(endpointId);
      if (endpoint === undefined) return;
      const { failingSince: _, disabledAt: __, disabledReason: ___, ...rest } = endpoint;
      if (health.kind === "healthy") endpoints.set(endpointId, rest);
      else if (health.kind === "failing") {
        // The first failure since the last success sets it; later ones leave it.
        endpoints.set(endpointId, { ...endpoint, failingSince: endpoint.failingSince ?? health.since });
      } else {
        endpoints.set(endpointId, {
          ...rest,
          ...(endpoint.failingSince === undefined ? {} : { failingSince: endpoint.failingSince }),
          disabledAt: health.at,
          disabledReason: health.reason,
        });
        cancelPending(endpointId);
      }
    },
    async earliestSubscription() {
      let earliest: number | undefined;
      for (const e of endpoints.values()) {
        if (e.disabledAt === undefined) earliest = Math.min(earliest ?? e.fromSeq, e.fromSeq);
      }
      return earliest;
    },
    async subscribers(owners) {
      const wanted = new Set(owners);
      return [...endpoints.values()].filter((e) => wanted.has(e.owner) && e.disabledAt === undefined);
    },
  };
}

/** The webhook store's endpoints: their records, secrets and health. */
import type { Collection } from "mongodb";
import type { EndpointRecord, WebhookStore } from "../webhook-store.ts";
import { type EndpointDoc, endpointOf, toEndpointDoc } from "./mongo-webhook-docs.ts";

export interface MongoWebhookEndpointsOptions {
  readonly endpoints: Collection<EndpointDoc>;
  /** Server-side bound on queries that can scan (lists, counts). */
  readonly bounded: { readonly maxTimeMS: number };
  /** Runs one operation under the store's guard, after its indexes exist. */
  readonly run: <T>(op: () => Promise<T>) => Promise<T>;
  /** Ends an endpoint's pending deliveries (deleted or disabled). */
  readonly cancelPending: (endpointId: string) => Promise<void>;
}

export type MongoWebhookEndpoints = Pick<
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

export function createMongoWebhookEndpoints(options: MongoWebhookEndpointsOptions): MongoWebhookEndpoints {
  const { endpoints, bounded, run, cancelPending } = options;
  return {
    createEndpoint: (record, maxPerOwner) =>
      run(async () => {
        // Counted, then inserted: replicas racing on one owner's last free place may both win it,
        // so the cap is exact within a replica and may be passed by a few across replicas.
        const count = await endpoints.countDocuments({ owner: record.owner }, bounded);
        if (count >= maxPerOwner) return "limit";
        await endpoints.insertOne(toEndpointDoc(record));
        return "created";
      }),
    getEndpoint: (owner, endpointId) =>
      run(async () => endpointOf(await endpoints.findOne({ _id: endpointId, owner }))),
    endpointById: (endpointId) => run(async () => endpointOf(await endpoints.findOne({ _id: endpointId }))),
    listEndpoints: (owner, page) =>
      run(async () => {
        const [docs, total] = await Promise.all([
          endpoints
            .find({ owner }, bounded)
            .sort({ createdAt: -1, _id: 1 })
            .skip(page.offset)
            .limit(page.limit)
            .toArray(),
          endpoints.countDocuments({ owner }, bounded),
        ]);
        return { endpoints: docs.map((d) => endpointOf(d) as EndpointRecord), total };
      }),
    deleteEndpoint: (owner, endpointId) =>
      run(async () => {
        const { deletedCount } = await endpoints.deleteOne({ _id: endpointId, owner });
        // Cancelled either way: a delete that failed after removing the endpoint is repaired by
        // the caller's retry, which finds nothing to delete and still cancels.
        await cancelPending(endpointId);
        return deletedCount > 0;
      }),
    setSecrets: (owner, endpointId, secrets) =>
      run(async () => {
        const doc = await endpoints.findOneAndUpdate(
          { _id: endpointId, owner },
          { $set: { secrets: [...secrets] } },
          { returnDocument: "after" },
        );
        return endpointOf(doc);
      }),
    setHealth: (endpointId, health) =>
      run(async () => {
        if (health.kind === "healthy") {
          await endpoints.updateOne({ _id: endpointId }, { $unset: { failingSince: "" } });
        } else if (health.kind === "failing") {
          // The first failure since the last success sets it; later ones leave it.
          await endpoints.updateOne(
            { _id: endpointId, failingSince: { $exists: false } },
            { $set: { failingSince: health.since } },
          );
        } else {
          await endpoints.updateOne(
            { _id: endpointId },
            { $set: { disabledAt: health.at, disabledReason: health.reason } },
          );
          await cancelPending(endpointId);
        }
      }),
    earliestSubscription: () =>
      run(async () => {
        const [earliest] = await endpoints
          .find({ disabledAt: { $exists: false } }, { ...bounded, projection: { fromSeq: 1 } })
          .sort({ fromSeq: 1 })
          .limit(1)
          .toArray();
        return earliest?.fromSeq;
      }),
    subscribers: (owners) =>
      run(async () => {
        const docs = await endpoints
          .find({ owner: { $in: [...owners] }, disabledAt: { $exists: false } }, bounded)
          .toArray();
        return docs.map((d) => endpointOf(d) as EndpointRecord);
      }),
  };
}

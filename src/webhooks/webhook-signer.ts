import { Webhook } from "standardwebhooks";
import type { EndpointSecret } from "./webhook-store.ts";

/** The Standard Webhooks headers of one attempt. */
export interface SignedHeaders {
  readonly "webhook-id": string;
  readonly "webhook-timestamp": string;
  readonly "webhook-signature": string;
}

/**
 * Signs an attempt as Standard Webhooks says, with the specification's reference library:
 * `v1,` + base64 HMAC-SHA256 of `id.timestamp.body` under each secret still in force (the current
 * one, and the one a rotation replaced until it expires), space-separated, so a receiver that
 * knows either verifies.
 */
export function signWebhook(
  id: string,
  at: Date,
  body: string,
  secrets: readonly EndpointSecret[],
): SignedHeaders {
  const live = secrets.filter((s) => s.expiresAt === undefined || s.expiresAt > at);
  return {
    "webhook-id": id,
    "webhook-timestamp": String(Math.floor(at.getTime() / 1000)),
    "webhook-signature": live.map((s) => new Webhook(s.secret).sign(id, at, body)).join(" "),
  };
}

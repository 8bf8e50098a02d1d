import { randomBytes } from "node:crypto";

/** Standard Webhooks' secret prefix. */
const PREFIX = "whsec_";

/** A new signing secret: `whsec_` and the base64 of 32 random bytes (the specification allows 24 to 64). */
export function newWebhookSecret(): string {
  return PREFIX + randomBytes(32).toString("base64");
}

/** A new endpoint id: `ep_` and 16 random bytes as base64url. */
export function newEndpointId(): string {
  return `ep_${randomBytes(16).toString("base64url")}`;
}

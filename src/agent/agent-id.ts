import { randomBytes } from "node:crypto";

/** A new agent id: 16 random bytes (128 bits) as base64url, 22 URL-safe characters. */
export function newAgentId(): string {
  return randomBytes(16).toString("base64url");
}

import { createContextKey } from "@connectrpc/connect";

/**
 * The caller's principal, which owns the agents it creates: the owner of its API key, set by the
 * auth interceptor; "anonymous" when authentication is off (AUTH_MODE=none).
 */
export const principalKey = createContextKey<string>("anonymous", { description: "caller principal" });

/** The id of the caller's API key (never the key), for the call's log line; empty without one. */
export const keyIdKey = createContextKey<string>("", { description: "API key id" });

/** Caps an admin set on the caller's API key (see ApiKeyRecord); empty: the service's. */
export const callerCapsKey = createContextKey<{ readonly maxAgents?: number; readonly maxPending?: number }>(
  {},
  { description: "caps of the caller's API key" },
);

import { createContextKey } from "@connectrpc/connect";

/**
 * The caller's principal, which owns the agents it creates. Until authentication exists every
 * caller is "anonymous"; an authentication interceptor only has to set this key.
 */
export const principalKey = createContextKey<string>("anonymous", { description: "caller principal" });

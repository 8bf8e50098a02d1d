import { type ContextValues, createContextKey, createContextValues } from "@connectrpc/connect";

/** The address the call came from (the TCP peer), for limits on callers without a valid key. */
export const clientAddressKey = createContextKey<string>("", { description: "client address" });

/** The context values every call starts with, on connect-node's path and the lean one alike. */
export function callContextValues(remoteAddress: string | undefined): ContextValues {
  const values = createContextValues();
  if (remoteAddress !== undefined) values.set(clientAddressKey, remoteAddress);
  return values;
}

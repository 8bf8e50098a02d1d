import { randomUUID } from "node:crypto";
import { createContextKey } from "@connectrpc/connect";

/** The header a caller (or a proxy in front) may set to correlate its logs with ours. */
export const REQUEST_ID_HEADER = "x-request-id";

/**
 * The current call's request id, set by the logging interceptor, so every log line about the call
 * (the error interceptor's included) carries the same id. Empty outside a call.
 */
export const requestIdKey = createContextKey<string>("", { description: "request id" });

/** Short and plain: a caller's id is copied into logs and headers, so nothing else is taken. */
const SANE_ID = /^[A-Za-z0-9._-]{1,128}$/;

/** The caller's request id when it is sane, else a fresh random one. */
export function requestIdFrom(header: string | null): string {
  return header !== null && SANE_ID.test(header) ? header : randomUUID();
}

import { randomFillSync } from "node:crypto";
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

/** Ids made from one fill of the random pool. */
const POOL_IDS = 256;
const HEX = "0123456789abcdef";
/** Where each of a UUID's 16 bytes goes in its 36 characters (8-4-4-4-12). */
const SLOTS = [0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34];

/**
 * Request ids: the caller's `x-request-id` when it is sane, else a fresh random (version 4) UUID.
 *
 * node:crypto's randomUUID builds its text from 20 concatenations, about 600 bytes of garbage on
 * every call that comes without an id (most of them); here the digits are written into one
 * reused buffer, read out as one string.
 */
export function createRequestIds(): (header: string | null) => string {
  const pool = Buffer.allocUnsafe(16 * POOL_IDS);
  let next = pool.length;
  const text = Buffer.from("00000000-0000-4000-8000-000000000000", "latin1");
  const uuid = (): string => {
    if (next === pool.length) {
      randomFillSync(pool);
      next = 0;
    }
    for (let i = 0; i < 16; i++) {
      let byte = pool[next + i] as number;
      if (i === 6)
        byte = (byte & 0x0f) | 0x40; // version 4
      else if (i === 8) byte = (byte & 0x3f) | 0x80; // RFC 9562 variant
      const at = SLOTS[i] as number;
      text[at] = HEX.charCodeAt(byte >> 4);
      text[at + 1] = HEX.charCodeAt(byte & 0x0f);
    }
    next += 16;
    return text.toString("latin1", 0, 36);
  };
  return (header) => (header !== null && SANE_ID.test(header) ? header : uuid());
}

/**
 * Messages that cannot change. A message the service hands out again and again (a cached price
 * entry) is frozen, deeply, so that no answer can change it under another; the lean path's
 * encoders then keep the bytes of such a message and write them again instead of encoding it anew.
 */
import type { ScratchBuffer } from "./scratch-buffer.ts";

/** Freezes `value` and every object inside it; typed arrays (bytes fields) cannot be frozen and stay as they are. */
export function deepFreeze<T extends object>(value: T): T {
  if (ArrayBuffer.isView(value)) return value;
  for (const inner of Object.values(value)) {
    if (inner !== null && typeof inner === "object") deepFreeze(inner);
  }
  return Object.freeze(value);
}

/** Whether nothing reachable from `value` can change: it and every object inside it are frozen. */
export function deeplyFrozen(value: object): boolean {
  if (!Object.isFrozen(value)) return false;
  for (const inner of Object.values(value)) {
    if (inner !== null && typeof inner === "object" && !deeplyFrozen(inner)) return false;
  }
  return true;
}

/**
 * `write`, remembering what it wrote for each deeply frozen value (per writer, so per field and
 * encoder options) and writing those bytes again when the value comes back; anything that could
 * still change is written anew every time.
 */
export function rememberFrozen<W extends ScratchBuffer>(
  write: (w: W, value: object) => void,
): (w: W, value: object) => void {
  const remembered = new WeakMap<object, Buffer>();
  return (w, value) => {
    const known = remembered.get(value);
    if (known !== undefined) {
      w.raw(known);
      return;
    }
    const start = w.pos;
    write(w, value);
    if (deeplyFrozen(value)) remembered.set(value, Buffer.from(w.buf.subarray(start, w.pos)));
  };
}

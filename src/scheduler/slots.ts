import type { Schedule } from "../agent/schedule.ts";

const HOUR_MS = 60 * 60 * 1000;
const PERIOD_MS: Record<Exclude<Schedule, "monthly">, number> = {
  hourly: HOUR_MS,
  daily: 24 * HOUR_MS,
  weekly: 7 * 24 * HOUR_MS,
};

/**
 * Slot `k` (k >= 0; slot 0 is the anchor itself) of an agent anchored at `anchor`, in UTC. A pure
 * function of anchor, schedule and k, so every replica computes the same slots without talking to
 * the others. Months count from the anchor, not from the previous slot, so a month-end anchor
 * stays at month end: Jan 31, Feb 28 (29), Mar 31, Apr 30, never drifting to the 28th.
 */
export function slotAt(anchor: Date, schedule: Schedule, k: number): Date {
  if (schedule !== "monthly") return new Date(anchor.getTime() + k * PERIOD_MS[schedule]);
  const year = anchor.getUTCFullYear();
  const month = anchor.getUTCMonth() + k;
  const lastDay = new Date(Date.UTC(year, month + 1, 0)).getUTCDate();
  const slot = new Date(anchor.getTime());
  slot.setUTCDate(1);
  slot.setUTCFullYear(year, month, Math.min(anchor.getUTCDate(), lastDay));
  return slot;
}

/** The index of the first slot strictly after `after` (at least 1: the anchor is no run). */
export function firstSlotIndexAfter(anchor: Date, schedule: Schedule, after: Date): number {
  const elapsed = after.getTime() - anchor.getTime();
  if (elapsed < 0) return 1;
  let k: number;
  if (schedule === "monthly") {
    k =
      (after.getUTCFullYear() - anchor.getUTCFullYear()) * 12 + (after.getUTCMonth() - anchor.getUTCMonth());
    k = Math.max(0, k - 1);
  } else {
    k = Math.floor(elapsed / PERIOD_MS[schedule]);
  }
  // The estimate is at most one or two slots early; step to the exact one.
  while (slotAt(anchor, schedule, k).getTime() <= after.getTime()) k++;
  return Math.max(1, k);
}

/** The first slot strictly after `after`. */
export function firstSlotAfter(anchor: Date, schedule: Schedule, after: Date): Date {
  return slotAt(anchor, schedule, firstSlotIndexAfter(anchor, schedule, after));
}

/**
 * The slot before the one at (or just after, within less than a period) `slot`, or undefined for
 * the first one (slot 1: the anchor itself is no run).
 */
export function slotBefore(anchor: Date, schedule: Schedule, slot: Date): Date | undefined {
  const index = firstSlotIndexAfter(anchor, schedule, slot) - 1;
  return index >= 2 ? slotAt(anchor, schedule, index - 1) : undefined;
}

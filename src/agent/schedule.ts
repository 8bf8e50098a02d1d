/** The recurrences an agent can run on. */
export const SCHEDULES = ["hourly", "daily", "weekly", "monthly"] as const;
export type Schedule = (typeof SCHEDULES)[number];

const HOUR_MS = 60 * 60 * 1000;

/**
 * The time one period of `schedule` after `from`, in UTC. A month is a calendar month, clamped to
 * the last day of a shorter month (Jan 31 + 1 month = Feb 28 or 29), so runs never skip a month.
 */
export function nextRunAfter(from: Date, schedule: Schedule): Date {
  switch (schedule) {
    case "hourly":
      return new Date(from.getTime() + HOUR_MS);
    case "daily":
      return new Date(from.getTime() + 24 * HOUR_MS);
    case "weekly":
      return new Date(from.getTime() + 7 * 24 * HOUR_MS);
    case "monthly": {
      const next = new Date(from.getTime());
      const day = next.getUTCDate();
      next.setUTCDate(1);
      next.setUTCMonth(next.getUTCMonth() + 1);
      const lastDay = new Date(Date.UTC(next.getUTCFullYear(), next.getUTCMonth() + 1, 0)).getUTCDate();
      next.setUTCDate(Math.min(day, lastDay));
      return next;
    }
  }
}

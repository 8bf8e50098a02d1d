/** The recurrences an agent can run on. */
export const SCHEDULES = ["hourly", "daily", "weekly", "monthly"] as const;
export type Schedule = (typeof SCHEDULES)[number];

/**
 * Schedule time: the clock agent schedules are computed in. With SCHEDULE_TIME_SCALE = 1 it is
 * real time; with 3600 an hour of schedule time passes every real second (demos, tests).
 *
 * The mapping is anchored at a fixed origin, not at each process's start, so replicas started at
 * different moments compute the same schedule time for the same real time, and so the same slots.
 */
export interface ScheduleClock {
  /** The scale: schedule milliseconds per real millisecond. */
  readonly scale: number;
  /** Schedule time of a real instant. */
  toSchedule(real: Date): Date;
  /** The real instant at which schedule time reaches `schedule` (rounded up to a millisecond). */
  toReal(schedule: Date): Date;
}

/** 2026-01-01T00:00:00Z: where real time and schedule time agree, whatever the scale. */
export const SCHEDULE_ORIGIN_MS = Date.UTC(2026, 0, 1);

export function createScheduleClock(options: { scale: number }): ScheduleClock {
  const { scale } = options;
  if (!(Number.isFinite(scale) && scale >= 1)) throw new RangeError("scale must be a finite number >= 1");
  if (scale === 1) return { scale, toSchedule: (real) => new Date(real), toReal: (s) => new Date(s) };
  return {
    scale,
    toSchedule: (real) => new Date(SCHEDULE_ORIGIN_MS + (real.getTime() - SCHEDULE_ORIGIN_MS) * scale),
    toReal: (schedule) =>
      new Date(SCHEDULE_ORIGIN_MS + Math.ceil((schedule.getTime() - SCHEDULE_ORIGIN_MS) / scale)),
  };
}

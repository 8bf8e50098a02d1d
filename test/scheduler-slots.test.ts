/**
 * Schedule time and slots: pure functions every replica computes alike. Tested by walking the
 * calendar, never by waiting.
 */
import { describe, expect, it } from "vitest";
import { SCHEDULES } from "../src/agent/schedule.ts";
import { createScheduleClock, SCHEDULE_ORIGIN_MS } from "../src/scheduler/schedule-clock.ts";
import { firstSlotAfter, firstSlotIndexAfter, slotAt, slotBefore } from "../src/scheduler/slots.ts";

const iso = (d: Date) => d.toISOString();

describe("slotAt", () => {
  it("counts months from the anchor, clamped to shorter months, without drifting", () => {
    const anchor = new Date("2027-01-31T09:15:00.000Z");
    const slots = [0, 1, 2, 3, 4, 12, 13].map((k) => iso(slotAt(anchor, "monthly", k)));
    expect(slots).toEqual([
      "2027-01-31T09:15:00.000Z",
      "2027-02-28T09:15:00.000Z",
      "2027-03-31T09:15:00.000Z",
      "2027-04-30T09:15:00.000Z",
      "2027-05-31T09:15:00.000Z",
      "2028-01-31T09:15:00.000Z",
      "2028-02-29T09:15:00.000Z", // leap year
    ]);
  });

  it("steps fixed periods exactly, across DST-free UTC", () => {
    const anchor = new Date("2027-03-27T23:30:00.000Z");
    expect(iso(slotAt(anchor, "hourly", 3))).toBe("2027-03-28T02:30:00.000Z");
    expect(iso(slotAt(anchor, "daily", 2))).toBe("2027-03-29T23:30:00.000Z");
    expect(iso(slotAt(anchor, "weekly", 1))).toBe("2027-04-03T23:30:00.000Z");
  });
});

describe("firstSlotAfter", () => {
  it.each(SCHEDULES)("%s: agrees with a step-by-step walk over two years of instants", (schedule) => {
    const anchor = new Date("2027-01-31T10:00:00.000Z");
    // Instants spread irregularly over two years, slots themselves included.
    const probes: Date[] = [];
    for (let t = anchor.getTime() - 3_600_000; t < anchor.getTime() + 2 * 366 * 86_400_000; t += 7_919_117) {
      probes.push(new Date(t));
    }
    for (let k = 0; k < 30; k++) probes.push(slotAt(anchor, schedule, k));
    probes.sort((a, b) => a.getTime() - b.getTime());
    // The reference walks the slots one by one, alongside the sorted instants.
    let k = 1;
    for (const after of probes) {
      while (slotAt(anchor, schedule, k).getTime() <= after.getTime()) k++;
      expect(firstSlotIndexAfter(anchor, schedule, after), `${schedule} after ${iso(after)}`).toBe(k);
    }
  });

  it("never returns the anchor itself, and is strictly after the instant", () => {
    const anchor = new Date("2027-05-01T00:00:00.000Z");
    expect(iso(firstSlotAfter(anchor, "daily", anchor))).toBe("2027-05-02T00:00:00.000Z");
    expect(iso(firstSlotAfter(anchor, "daily", new Date("2027-05-02T00:00:00.000Z")))).toBe(
      "2027-05-03T00:00:00.000Z",
    );
  });
});

describe("schedule clock", () => {
  it("is real time at scale 1", () => {
    const clock = createScheduleClock({ scale: 1 });
    const now = new Date("2027-02-03T04:05:06.789Z");
    expect(iso(clock.toSchedule(now))).toBe(iso(now));
    expect(iso(clock.toReal(now))).toBe(iso(now));
  });

  it("at 3600, an hourly agent's slots are a real second apart", () => {
    const clock = createScheduleClock({ scale: 3600 });
    const anchor = clock.toSchedule(new Date("2026-11-22T12:00:00.000Z"));
    const real = [1, 2, 3].map((k) => clock.toReal(slotAt(anchor, "hourly", k)).getTime());
    expect(real.slice(1).map((t, i) => t - (real[i] ?? 0))).toEqual([1000, 1000]);
  });

  it("two clocks made at different moments agree (a fixed origin, not each process's start)", async () => {
    const a = createScheduleClock({ scale: 3600 });
    await new Promise((resolve) => setTimeout(resolve, 5));
    const b = createScheduleClock({ scale: 3600 });
    const t = new Date("2026-12-24T18:00:00.123Z");
    expect(iso(a.toSchedule(t))).toBe(iso(b.toSchedule(t)));
    expect(a.toSchedule(new Date(SCHEDULE_ORIGIN_MS)).getTime()).toBe(SCHEDULE_ORIGIN_MS);
  });

  it("maps a slot back to the first real millisecond at which it is due", () => {
    const clock = createScheduleClock({ scale: 7 });
    for (const ms of [SCHEDULE_ORIGIN_MS + 1, SCHEDULE_ORIGIN_MS + 13, SCHEDULE_ORIGIN_MS + 700_001]) {
      const real = clock.toReal(new Date(ms));
      expect(clock.toSchedule(real).getTime()).toBeGreaterThanOrEqual(ms);
      expect(clock.toSchedule(new Date(real.getTime() - 1)).getTime()).toBeLessThan(ms);
    }
  });

  it("refuses a scale below 1", () => {
    expect(() => createScheduleClock({ scale: 0.5 })).toThrow(RangeError);
  });
});

describe("slotBefore", () => {
  it("is the previous slot of every schedule, none before the first, also a little after a slot", () => {
    const anchor = new Date("2027-01-31T09:15:00.000Z");
    for (const schedule of SCHEDULES) {
      expect(slotBefore(anchor, schedule, slotAt(anchor, schedule, 1)), schedule).toBeUndefined();
      for (const k of [2, 3, 13]) {
        const slot = slotAt(anchor, schedule, k);
        expect(iso(slotBefore(anchor, schedule, slot) as Date), `${schedule} ${k}`).toBe(
          iso(slotAt(anchor, schedule, k - 1)),
        );
        // A real slot under a time scale is its schedule slot rounded up to a real millisecond.
        const later = new Date(slot.getTime() + 600);
        expect(iso(slotBefore(anchor, schedule, later) as Date), `${schedule} ${k} +600 ms`).toBe(
          iso(slotAt(anchor, schedule, k - 1)),
        );
      }
    }
  });
});

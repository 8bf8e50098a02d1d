/**
 * An agent's slots in real time: its schedule runs in schedule time (see ScheduleClock), anchored
 * at its creation, and the scheduler compares slots with the real clock. A kind with a timing of
 * its own (see AgentTiming) says where its agents wait instead, and has no earlier slots.
 */
import type { AgentRecord } from "../../agent/agent-store.ts";
import type { Schedule } from "../../agent/schedule.ts";
import type { TimingOf } from "../agent-timing.ts";
import type { ScheduleClock } from "../schedule-clock.ts";
import { firstSlotAfter, slotBefore as previousSlot } from "../slots.ts";

export interface AgentSlots {
  /** The slot of `agent` before its slot at real instant `slot`, in real time (none before the first). */
  before(agent: AgentRecord, slot: Date): Date | undefined;
  /** The first slot of `agent` strictly after real instant `after`, in real time. */
  nextAfter(agent: AgentRecord, after: Date): Date;
}

export function createAgentSlots(options: {
  readonly clock: ScheduleClock;
  readonly timingOf?: TimingOf | undefined;
}): AgentSlots {
  const { clock } = options;
  const timingOf = options.timingOf ?? (() => undefined);
  const scheduleOf = (agent: AgentRecord) => agent.config.schedule as Schedule;
  return {
    before(agent, slot) {
      if (timingOf(agent.type) !== undefined) return undefined;
      const anchor = clock.toSchedule(agent.createdAt);
      const before = previousSlot(anchor, scheduleOf(agent), clock.toSchedule(slot));
      return before === undefined ? undefined : clock.toReal(before);
    },
    nextAfter(agent, after) {
      const timing = timingOf(agent.type);
      if (timing !== undefined) return timing.nextAfter(agent, after);
      const anchor = clock.toSchedule(agent.createdAt);
      return clock.toReal(firstSlotAfter(anchor, scheduleOf(agent), clock.toSchedule(after)));
    },
  };
}

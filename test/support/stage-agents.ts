/** Agents as the scheduler's stages see them, for the stages' own tests. */
import { randomBytes } from "node:crypto";
import type { AgentRecord, JsonObject } from "../../src/agent/agent-store.ts";
import { slotAt } from "../../src/scheduler/slots.ts";
import { TRANSFER_CONFIG } from "./agent-fixtures.ts";

export const HOUR = 3_600_000;
/** Agents are created at T0; their slots are hourly from there. */
export const T0 = new Date("2031-06-01T00:00:00.000Z");

/** The agent's `k`th hourly slot (1 is the first, one hour after T0). */
export const slot = (k: number) => slotAt(T0, "hourly", k);

/** An hourly transfer agent created at T0, active at its first slot unless `fields` say otherwise. */
export function hourlyAgent(fields: Partial<AgentRecord> = {}): AgentRecord {
  return {
    agentId: `agent-${randomBytes(6).toString("hex")}`,
    owner: "owner-1",
    type: "transfer",
    status: "active",
    config: { ...TRANSFER_CONFIG, schedule: "hourly" } as JsonObject,
    createdAt: T0,
    nextRunAt: slot(1),
    ...fields,
  };
}

import { Counter, type Registry } from "prom-client";
import type { AgentCap } from "../agent/owner-caps.ts";

/**
 * `agent_creates_refused_total{cap}`: CreateAgent calls refused at a cap per owner (`agents`:
 * MAX_AGENTS_PER_OWNER, `pending`: MAX_PENDING_PER_OWNER, or a key's own). A steady rise from one
 * owner is a client stuck in a loop or a tenant testing the limits.
 */
export function registerAgentCapMetrics(registry: Registry): (cap: AgentCap) => void {
  const refused = new Counter({
    name: "agent_creates_refused_total",
    help: "CreateAgent calls refused at a cap per owner, by cap.",
    labelNames: ["cap"] as const,
    registers: [registry],
  });
  for (const cap of ["agents", "pending"] as const) refused.inc({ cap }, 0);
  return (cap) => refused.inc({ cap });
}

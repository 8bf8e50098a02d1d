/**
 * ListAgents on the in-memory store with many agents: milliseconds per call for an unfiltered
 * page, a status-filtered page and a deep offset. Run: node scripts/bench/memory-list.ts [agents]
 */
import { newAgentId } from "../../src/agent/agent-id.ts";
import { createMemoryAgentStore } from "../../src/agent/memory-agent-store.ts";

const AGENTS = Number(process.argv[2] ?? 120_000);
const store = createMemoryAgentStore();
const start = Date.UTC(2026, 0, 1);
for (let i = 0; i < AGENTS; i++) {
  await store.create({
    record: {
      agentId: newAgentId(),
      owner: "owner",
      type: i % 2 === 0 ? "transfer" : "swap",
      status: i % 3 === 0 ? "active" : "pending",
      config: { amount: 1 },
      createdAt: new Date(start + i * 1000),
      nextRunAt: new Date(start + i * 1000 + 3_600_000),
    },
  });
}
for (const [name, query] of [
  ["first page", { limit: 10, offset: 0 }],
  ["status=active", { status: "active" as const, limit: 10, offset: 0 }],
  ["offset 5000", { limit: 100, offset: 5000 }],
] as const) {
  const calls = 200;
  const t = performance.now();
  for (let i = 0; i < calls; i++) await store.list("owner", query);
  console.log(`${AGENTS} agents, ${name}: ${((performance.now() - t) / calls).toFixed(3)} ms per call`);
}

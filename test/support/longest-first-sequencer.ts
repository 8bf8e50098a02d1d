import { relative } from "node:path";
import { fileURLToPath } from "node:url";
import { BaseSequencer, type TestSpecification } from "vitest/node";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

/**
 * Roughly how long each long test file takes on the two-core machine CI uses (seconds, from a
 * full run's JSON report). Only the order matters: a file missing here, or a figure out of date,
 * costs time, never a result.
 */
const TYPICAL_SECONDS: Readonly<Record<string, number>> = {
  "test/docs.test.ts": 115,
  "test/hostile-swap-routes.test.ts": 91,
  "test/conformance.test.ts": 85,
  "test/agent-events.test.ts": 83,
  "test/streams.test.ts": 74,
  "test/agent-service.test.ts": 73,
  "test/swap-agent.test.ts": 69,
  "test/activation-fairness.test.ts": 65,
  "test/stream-release.test.ts": 43,
  "test/jupiter-prices.test.ts": 39,
  "test/webhooks.test.ts": 36,
  "test/transfer-agent.test.ts": 35,
  "test/agent-mongo-faults.test.ts": 32,
  "test/auth.test.ts": 32,
  "test/approvals-bound.test.ts": 31,
  "test/scheduler.test.ts": 30,
  "test/first-agents.test.ts": 29,
  "test/pending-account-watch.test.ts": 27,
  "test/health.test.ts": 25,
  "test/local-chain-idle.test.ts": 22,
  "test/event-repair.test.ts": 21,
  "test/http-limits.test.ts": 21,
  "test/config.test.ts": 20,
  "test/idle-heap-release.test.ts": 19,
  "test/mongo-versioned-update.test.ts": 19,
  "test/agent-store.test.ts": 17,
  "test/local-chain-fuzz.test.ts": 16,
  "test/agent-lifecycle.test.ts": 16,
  "test/swap-chain-requests.test.ts": 16,
  "test/local-swap-routes.test.ts": 15,
};

/**
 * The slow suite's load tests (vitest.slow.config.ts, two at a time), in the order they start.
 * transfer-replicas (about 60 s, and up to 120 s: three replicas, a chain and a database working
 * hard) starts first, beside the light swap-replicas (10 agents, about 40 s) and then
 * idempotency-crash; scheduler-replicas (about 36 s, mostly waiting on its 6 s slots) comes last.
 * Longest first put the two heavy ones side by side: each took half as long again (94 and 111 s,
 * a slow suite of 140 s against 84-110 s).
 */
const SLOW_ORDER: readonly string[] = [
  "test/transfer-replicas.slow.test.ts",
  "test/swap-replicas.slow.test.ts",
  "test/idempotency-crash.slow.test.ts",
  "test/scheduler-replicas.slow.test.ts",
];

/**
 * Starts the longest files first, so that the run does not end with one long file on one core
 * and the others idle. Vitest's own order puts the files that took longest in the last run first,
 * but a fresh clone has no last run: it falls back to file size, which put the 85-second
 * conformance file among the last to start (a full run's last 80 s were that file alone).
 * Files this list does not know keep vitest's order, after the known ones. The slow suite's load
 * tests go in the order SLOW_ORDER gives.
 */
export class LongestFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const typical = (spec: TestSpecification) => {
      const file = relative(ROOT, spec.moduleId);
      const slow = SLOW_ORDER.indexOf(file);
      return slow >= 0 ? SLOW_ORDER.length - slow : (TYPICAL_SECONDS[file] ?? 0);
    };
    // Array.prototype.sort is stable: files of equal weight keep vitest's order.
    return (await super.sort(files)).sort((a, b) => typical(b) - typical(a));
  }
}

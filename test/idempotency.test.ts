/**
 * CreateAgent's idempotency-key through the real server: a repeat with a different request is
 * refused on every protocol, and 50 concurrent repeats all get the one agent at once. (The
 * database crash case is idempotency-crash.slow.test.ts.)
 */
import { randomBytes } from "node:crypto";
import { Code } from "@connectrpc/connect";
import { describe, expect, inject, it } from "vitest";
import { AgentService } from "../gen/agent/v1/agent_pb.ts";
import { createOverJson, transfer } from "./support/agent-fixtures.ts";
import { createProtocols, withStructConfig } from "./support/callers.ts";
import { useCleanups } from "./support/cleanups.ts";
import { startServer } from "./support/start-server.ts";

const defer = useCleanups();

const STORES: [string, () => Record<string, string>][] = [
  ["memory", () => ({})],
  [
    "mongo",
    () => ({ MONGODB_URI: inject("mongoUri"), MONGODB_DB: `idem_${randomBytes(3).toString("hex")}` }),
  ],
];

describe.each(STORES)("on the %s store", (_name, env) => {
  it("refuses the same key with a different request, on every protocol, and keeps answering the first", async () => {
    const server = await startServer({ env: env() });
    defer(() => server.close());
    for (const protocol of createProtocols(server.baseUrl).map(withStructConfig)) {
      defer(async () => protocol.close());
      const key = `fp-${randomBytes(4).toString("hex")}`;
      const first = await protocol.call(AgentService, "CreateAgent", transfer(1.5), {
        "idempotency-key": key,
      });
      expect(first.ok, protocol.name).toBe(true);
      const other = await protocol.call(
        AgentService,
        "CreateAgent",
        { ...transfer(99999), type: "transfer" },
        { "idempotency-key": key },
      );
      expect(other.ok ? 0 : other.code, protocol.name).toBe(Code.FailedPrecondition);
      expect(other.ok ? "" : other.message).toContain(
        "idempotency-key was first used with a different request",
      );
      const again = await protocol.call(AgentService, "CreateAgent", transfer(1.5), {
        "idempotency-key": key,
      });
      expect(again.ok && first.ok && (again.json.data as { agentId: string }).agentId).toBe(
        first.ok && (first.json.data as { agentId: string }).agentId,
      );
    }
  });

  it("50 concurrent repeats of one key: every caller gets the one agent, none waits or fails", async () => {
    const server = await startServer({ env: env() });
    defer(() => server.close());
    const key = `burst-${randomBytes(4).toString("hex")}`;
    const answers = await Promise.all(
      Array.from({ length: 50 }, () => createOverJson(server.baseUrl, transfer(2), key)),
    );
    expect(answers.map((a) => a.status)).toEqual(Array(50).fill(200));
    const ids = new Set(answers.map((a) => (a.json.data as { agentId: string }).agentId));
    expect(ids.size).toBe(1);
  });
});

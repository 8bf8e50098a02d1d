/**
 * The outbox survives the process: a service killed (SIGKILL) while a delivery is in flight
 * delivers it after a restart, on the same database, with the same webhook-id. Real processes
 * (src/main.ts, as operators run it) on FerretDB.
 */
import { randomBytes } from "node:crypto";
import { afterAll, expect, inject, it } from "vitest";
import { SWAP } from "./support/agent-fixtures.ts";
import { type MainProcess, startMain } from "./support/main-process.ts";
import { FAST_WEBHOOKS, startWebhookReceiver, verifyWebhook } from "./support/webhook-receiver.ts";

const processes: MainProcess[] = [];
afterAll(() => {
  for (const p of processes) p.kill();
});

const post = async (port: number, path: string, body: unknown) => {
  const response = await fetch(`http://127.0.0.1:${port}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return (await response.json()) as { data: Record<string, unknown> };
};

it("delivers after a restart what a killed process had in flight, with the same webhook-id", async () => {
  const receiver = await startWebhookReceiver();
  // The first attempt is never answered: the process dies while it waits.
  receiver.answer = (_hook, index) => (index === 0 ? undefined : 200);
  const env = {
    ...FAST_WEBHOOKS,
    MONGODB_URI: inject("mongoUri"),
    MONGODB_DB: `webhook_restart_${randomBytes(3).toString("hex")}`,
    SCHEDULER_ENABLED: "false",
    // A claim lasts 2 x 1 s + 1 s: the restarted process takes the delivery over after that.
    WEBHOOK_TIMEOUT_MS: "1000",
  };
  try {
    const first = await startMain(env);
    processes.push(first);
    const created = await post(first.port, "/v1/webhooks/endpoints", { url: receiver.url });
    const secret = String(created.data.secret);
    await post(first.port, "/v1/agents", SWAP);
    await receiver.waitFor(1);
    first.kill();
    await first.exited;

    const second = await startMain(env);
    processes.push(second);
    await receiver.waitFor(2, 20_000);
    const [lost, delivered] = receiver.received;
    expect(delivered?.id).toBe(lost?.id);
    expect(delivered?.body).toBe(lost?.body);
    expect(verifyWebhook(secret, delivered as never)).toMatchObject({ type: "agent.created" });
    const endpointId = String(created.data.endpointId);
    let listed: Record<string, unknown> | undefined;
    for (let i = 0; i < 100 && listed?.status !== "delivered"; i++) {
      const response = await fetch(
        `http://127.0.0.1:${second.port}/v1/webhooks/endpoints/${endpointId}/deliveries`,
      );
      listed = ((await response.json()) as { data: { deliveries: Record<string, unknown>[] } }).data
        .deliveries[0];
      await new Promise((r) => setTimeout(r, 50));
    }
    // The killed attempt counts: it began, and nobody knows how it ended.
    expect(listed).toMatchObject({
      deliveryId: lost?.id,
      status: "delivered",
      attempts: 2,
      lastResponseCode: 200,
    });
    await new Promise((r) => setTimeout(r, 300));
    expect(receiver.received).toHaveLength(2);
  } finally {
    await receiver.close();
  }
});

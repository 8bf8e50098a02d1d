/**
 * The deliverer's rules over days, on a clock the test moves: the retry schedule, and an endpoint
 * whose every delivery fails for the disable period is disabled (a success in between starts the
 * period again). Real HTTP to a receiver on a loopback socket; the memory store.
 */
import { spawn } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHttpWebhookSender } from "../src/webhooks/http-webhook-sender.ts";
import { createMemoryWebhookStore } from "../src/webhooks/memory-webhook-store.ts";
import { nextAttemptAt, retryDelayMs } from "../src/webhooks/retry-schedule.ts";
import { createWebhookDeliverer } from "../src/webhooks/webhook-deliverer.ts";
import { signWebhook } from "../src/webhooks/webhook-signer.ts";
import type { DeliveryRecord } from "../src/webhooks/webhook-store.ts";
import { startWebhookReceiver, type WebhookReceiver } from "./support/webhook-receiver.ts";

const HOUR = 3_600_000;
const DEFAULTS = { baseMs: 5_000, maxMs: 4 * HOUR, forMs: 24 * HOUR };

describe("the retry schedule", () => {
  it("doubles from 5 s up to 4 h, with ±20% jitter", () => {
    const middle = Array.from({ length: 14 }, (_, i) => retryDelayMs(i + 1, DEFAULTS, () => 0.5));
    expect(middle).toEqual([
      5_000,
      10_000,
      20_000,
      40_000,
      80_000,
      160_000,
      320_000,
      640_000,
      1_280_000,
      2_560_000,
      5_120_000,
      10_240_000,
      4 * HOUR,
      4 * HOUR,
    ]);
    expect(retryDelayMs(3, DEFAULTS, () => 0)).toBe(16_000);
    expect(retryDelayMs(3, DEFAULTS, () => 0.999999)).toBe(24_000);
    expect(retryDelayMs(1_000, DEFAULTS, () => 0.5)).toBe(4 * HOUR);
  });

  it("ends a day after the event: 17 attempts without jitter, and never past the window with it", () => {
    for (const random of [() => 0.5, () => 0, () => 0.999, Math.random]) {
      const start = new Date(0);
      let at: Date | undefined = start;
      let attempts = 0;
      while (at !== undefined) {
        attempts++;
        expect(at.getTime()).toBeLessThanOrEqual(DEFAULTS.forMs);
        at = nextAttemptAt(attempts, at, start, DEFAULTS, random);
      }
      if (random() === 0.5) expect(attempts).toBe(17);
      expect(attempts).toBeGreaterThanOrEqual(15);
      expect(attempts).toBeLessThanOrEqual(19);
    }
  });
});

describe("disabling an endpoint that keeps failing", () => {
  let receiver: WebhookReceiver;
  beforeAll(async () => {
    receiver = await startWebhookReceiver();
  });
  afterAll(async () => receiver.close());

  it("disables it after every delivery failed for the period, and cancels what was pending", async () => {
    let clock = Date.parse("2026-11-25T00:00:00Z");
    const now = () => new Date(clock);
    const store = createMemoryWebhookStore();
    const sender = createHttpWebhookSender({
      timeoutMs: 2_000,
      connectTimeoutMs: 2_000,
      maxResponseBytes: 65_536,
      allowPrivateNetworks: true,
      maxSocketsPerHost: 2,
      userAgent: "test",
    });
    const disabled: string[] = [];
    const deliverer = createWebhookDeliverer({
      store,
      sender,
      worker: "w",
      concurrency: 4,
      maxInFlightPerEndpoint: 4,
      maxInFlightPerOwner: 16,
      leaseMs: 5_000,
      retry: DEFAULTS,
      disableAfterMs: 72 * HOUR,
      sign: signWebhook,
      observer: { onDisabled: (reason) => disabled.push(reason) },
      now,
    });
    await store.createEndpoint(
      {
        endpointId: "ep_1",
        owner: "o",
        url: receiver.url,
        eventTypes: [],
        description: "",
        createdAt: now(),
        fromSeq: 0,
        secrets: [{ secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", createdAt: now() }],
      },
      10,
    );
    let seq = 0;
    const event = async (): Promise<string> => {
      seq++;
      const d: DeliveryRecord = {
        deliveryId: `msg_1_${seq}`,
        endpointId: "ep_1",
        owner: "o",
        eventSeq: seq,
        eventType: "agent.created",
        eventAt: now(),
        payload: `{"seq":${seq}}`,
        createdAt: now(),
        status: "pending",
        attempts: 0,
        lastResponseCode: 0,
        nextAttemptAt: now(),
        windowStart: now(),
      };
      await store.enqueue([d]);
      await deliverer.step();
      await deliverer.drain();
      return d.deliveryId;
    };
    const endpoint = () => store.getEndpoint("o", "ep_1");

    receiver.answer = () => 500;
    await event();
    const failingSince = (await endpoint())?.failingSince;
    expect(failingSince).toEqual(now());
    clock += 48 * HOUR;
    await event();
    // A success starts the period again.
    receiver.answer = () => 200;
    clock += 1 * HOUR;
    await event();
    expect((await endpoint())?.failingSince).toBeUndefined();
    receiver.answer = () => 503;
    await event();
    clock += 71 * HOUR;
    const pending = await event();
    expect((await endpoint())?.disabledAt).toBeUndefined();
    expect(disabled).toEqual([]);
    clock += 1 * HOUR;
    await event();
    expect(await endpoint()).toMatchObject({
      disabledAt: now(),
      disabledReason: "every delivery failed for 72 hours",
    });
    // Two attempts failed in that round (the earlier delivery's retry was due too): one disabled it.
    expect(disabled).toEqual(["failing"]);
    expect((await store.getDelivery("o", "ep_1", pending))?.status).toBe("canceled");
    expect(await store.subscribers(["o"])).toEqual([]);
    sender.close();
  });
});

describe("the sender's bounds", () => {
  it("gives up on an endpoint that does not answer within the timeout", async () => {
    const { createServer } = await import("node:http");
    const held: import("node:http").ServerResponse[] = [];
    const server = createServer((_req, res) => held.push(res));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const port = (server.address() as { port: number }).port;
    const sender = createHttpWebhookSender({
      timeoutMs: 300,
      connectTimeoutMs: 300,
      maxResponseBytes: 65_536,
      allowPrivateNetworks: true,
      maxSocketsPerHost: 2,
      userAgent: "test",
    });
    try {
      const started = performance.now();
      const result = await sender.send({ url: `http://127.0.0.1:${port}/`, headers: {}, body: "{}" });
      expect(result).toEqual({ kind: "failed", error: "no answer within 300 ms" });
      expect(performance.now() - started).toBeLessThan(5_000);
    } finally {
      sender.close();
      for (const res of held) res.destroy();
      server.closeAllConnections();
      server.close();
    }
  });

  it("reads an answer only up to its bound: an endless body still gives its status", async () => {
    const { createServer } = await import("node:http");
    let written = 0;
    const server = createServer((_req, res) => {
      res.writeHead(202);
      const chunk = Buffer.alloc(16 * 1024, 97);
      // Never ends on its own: the sender must stop reading.
      const pump = () => {
        while (!res.destroyed && res.write(chunk)) written += chunk.length;
        if (!res.destroyed) res.once("drain", pump);
      };
      pump();
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const port = (server.address() as { port: number }).port;
    const sender = createHttpWebhookSender({
      timeoutMs: 5_000,
      connectTimeoutMs: 5_000,
      maxResponseBytes: 65_536,
      allowPrivateNetworks: true,
      maxSocketsPerHost: 2,
      userAgent: "test",
    });
    try {
      const result = await sender.send({ url: `http://127.0.0.1:${port}/`, headers: {}, body: "{}" });
      expect(result).toEqual({ kind: "answered", status: 202 });
    } finally {
      sender.close();
      server.closeAllConnections();
      server.close();
    }
    expect(written).toBeLessThan(64 * 1024 * 1024);
  });
});

describe("the sender's connect timeout", () => {
  /**
   * A listener whose process never accepts (its event loop is blocked): once the kernel's accept
   * queue is full (the backlog of 1 holds two connections), new connections are not taken, and a
   * connect to it waits.
   */
  async function startUnreachable(): Promise<{ port: number; close: () => void }> {
    const child = spawn(
      process.execPath,
      [
        "-e",
        `const net = require("node:net");
         const server = net.createServer();
         server.listen({ port: 0, host: "127.0.0.1", backlog: 1 }, () => {
           require("node:fs").writeSync(1, server.address().port + "\\n");
           Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);
         });`,
      ],
      { stdio: ["ignore", "pipe", "inherit"] },
    );
    const port = await new Promise<number>((resolve) =>
      child.stdout.once("data", (d) => resolve(Number(String(d)))),
    );
    const { connect } = await import("node:net");
    const queued = [connect(port, "127.0.0.1"), connect(port, "127.0.0.1")];
    await Promise.all(queued.map((s) => new Promise((resolve) => s.once("connect", resolve))));
    return {
      port,
      close: () => {
        for (const s of queued) s.destroy();
        child.kill("SIGKILL");
      },
    };
  }

  it("gives up on a host that does not take the connection, and not on one that is slow to answer", async () => {
    const unreachable = await startUnreachable();
    const { createServer } = await import("node:net");
    // Takes the connection, never answers.
    const silent = createServer(() => {});
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    const silentPort = (silent.address() as { port: number }).port;
    const sender = createHttpWebhookSender({
      timeoutMs: 3_000,
      connectTimeoutMs: 300,
      maxResponseBytes: 65_536,
      allowPrivateNetworks: true,
      maxSocketsPerHost: 2,
      userAgent: "test",
    });
    try {
      const send = (port: number) =>
        sender.send({ url: `http://127.0.0.1:${port}/`, headers: {}, body: "{}" });
      expect(await send(unreachable.port)).toEqual({ kind: "failed", error: "no connection within 300 ms" });
      expect(await send(silentPort)).toEqual({ kind: "failed", error: "no answer within 3000 ms" });
    } finally {
      sender.close();
      unreachable.close();
      silent.close();
    }
  });
});

describe("owners sharing the places", () => {
  it("gives each owner with work a place in turn, however much another owner has waiting", async () => {
    const receiver = await startWebhookReceiver();
    // Every request is held open: the places stay taken, so who got them shows.
    receiver.answer = () => undefined;
    const store = createMemoryWebhookStore();
    const sender = createHttpWebhookSender({
      timeoutMs: 10_000,
      connectTimeoutMs: 10_000,
      maxResponseBytes: 65_536,
      allowPrivateNetworks: true,
      maxSocketsPerHost: 8,
      userAgent: "test",
    });
    const deliverer = createWebhookDeliverer({
      store,
      sender,
      worker: "w",
      concurrency: 2,
      maxInFlightPerEndpoint: 2,
      // No cap binds: the places go round the owners all the same.
      maxInFlightPerOwner: 2,
      leaseMs: 30_000,
      retry: DEFAULTS,
      disableAfterMs: 72 * HOUR,
      sign: signWebhook,
    });
    const secrets = [{ secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", createdAt: new Date() }];
    for (const owner of ["busy", "quiet"]) {
      await store.createEndpoint(
        {
          endpointId: `ep_${owner}`,
          owner,
          url: `${receiver.url}?to=${owner}`,
          eventTypes: [],
          description: "",
          createdAt: new Date(),
          fromSeq: 0,
          secrets,
        },
        10,
      );
    }
    const delivery = (owner: string, seq: number): DeliveryRecord => ({
      deliveryId: `ep_${owner}_${seq}`,
      endpointId: `ep_${owner}`,
      owner,
      eventSeq: seq,
      eventType: "agent.created",
      eventAt: new Date(),
      payload: "{}",
      createdAt: new Date(),
      status: "pending",
      attempts: 0,
      lastResponseCode: 0,
      nextAttemptAt: new Date(),
      windowStart: new Date(),
    });
    try {
      // The busy owner's backlog comes first, the quiet owner's one delivery last.
      const all = [...Array.from({ length: 6 }, (_, i) => delivery("busy", i)), delivery("quiet", 6)];
      await deliverer.offer(await store.enqueue(all));
      await receiver.waitFor(2);
      expect(receiver.received.map((h) => h.path.split("?to=")[1]).sort()).toEqual(["busy", "quiet"]);
      expect(deliverer.inFlight()).toBe(2);
    } finally {
      await receiver.close();
      await deliverer.drain();
      sender.close();
    }
  });
});

describe("signatures during a rotation", () => {
  it("signs with every secret in force, and stops signing with a replaced one once it expires", () => {
    const at = new Date("2026-11-25T12:00:00Z");
    const current = { secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", createdAt: at };
    const replaced = {
      secret: "whsec_c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0",
      createdAt: new Date(0),
      expiresAt: new Date(at.getTime() + 1_000),
    };
    const during = signWebhook("msg_1", at, "{}", [current, replaced]);
    expect(during["webhook-signature"].split(" ")).toHaveLength(2);
    const after = signWebhook("msg_1", new Date(at.getTime() + 1_000), "{}", [current, replaced]);
    expect(after["webhook-signature"].split(" ")).toHaveLength(1);
    expect(after["webhook-signature"]).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
    expect(after["webhook-timestamp"]).toBe(String(at.getTime() / 1000 + 1));
  });
});

describe("attempts in flight per endpoint", () => {
  it("never has more than maxInFlightPerEndpoint attempts at one endpoint, while another endpoint is served", async () => {
    const receiver = await startWebhookReceiver();
    let open = 0;
    let most = 0;
    const releases: (() => void)[] = [];
    const { createServer } = await import("node:http");
    const slow = createServer((req, res) => {
      open++;
      most = Math.max(most, open);
      req.resume();
      releases.push(() => {
        open--;
        res.writeHead(200).end();
      });
    });
    await new Promise<void>((resolve) => slow.listen(0, "127.0.0.1", resolve));
    const slowPort = (slow.address() as { port: number }).port;
    const store = createMemoryWebhookStore();
    const sender = createHttpWebhookSender({
      timeoutMs: 10_000,
      connectTimeoutMs: 10_000,
      maxResponseBytes: 65_536,
      allowPrivateNetworks: true,
      maxSocketsPerHost: 8,
      userAgent: "test",
    });
    const deliverer = createWebhookDeliverer({
      store,
      sender,
      worker: "w",
      concurrency: 16,
      maxInFlightPerEndpoint: 2,
      maxInFlightPerOwner: 16,
      leaseMs: 30_000,
      retry: DEFAULTS,
      disableAfterMs: 72 * HOUR,
      sign: signWebhook,
    });
    const secrets = [{ secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", createdAt: new Date() }];
    for (const [id, url] of [
      ["ep_slow", `http://127.0.0.1:${slowPort}/`],
      ["ep_fast", receiver.url],
    ] as const) {
      await store.createEndpoint(
        {
          endpointId: id,
          owner: "o",
          url,
          eventTypes: [],
          description: "",
          createdAt: new Date(),
          fromSeq: 0,
          secrets,
        },
        10,
      );
    }
    const delivery = (endpointId: string, seq: number): DeliveryRecord => ({
      deliveryId: `${endpointId}_${seq}`,
      endpointId,
      owner: "o",
      eventSeq: seq,
      eventType: "agent.created",
      eventAt: new Date(),
      payload: "{}",
      createdAt: new Date(),
      status: "pending",
      attempts: 0,
      lastResponseCode: 0,
      nextAttemptAt: new Date(),
      windowStart: new Date(),
    });
    try {
      const all = [
        ...Array.from({ length: 10 }, (_, i) => delivery("ep_slow", i)),
        ...Array.from({ length: 5 }, (_, i) => delivery("ep_fast", i)),
      ];
      await deliverer.offer(await store.enqueue(all));
      await receiver.waitFor(5);
      for (let i = 0; i < 100 && open < 2; i++) await new Promise((r) => setTimeout(r, 10));
      expect(open).toBe(2);
      // Released one at a time, the rest follow, never more than two at once.
      while (
        (await store.listDeliveries("o", "ep_slow", { status: "delivered", limit: 100, offset: 0 })).total <
        10
      ) {
        releases.shift()?.();
        await deliverer.step();
        await new Promise((r) => setTimeout(r, 20));
      }
      expect(most).toBe(2);
    } finally {
      for (const release of releases) release();
      await deliverer.drain();
      sender.close();
      slow.closeAllConnections();
      slow.close();
      await receiver.close();
    }
  });
});

/**
 * Requests a client controls the rate of (refused ones) are logged at a bounded rate, with the
 * lines dropped counted on the next line written; the metrics count every one.
 */
import { Writable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../src/logger.ts";
import { createRateLimitedLog } from "../src/observability/rate-limited-log.ts";
import { type RunningServer, startServer } from "./support/start-server.ts";

describe("createRateLimitedLog", () => {
  it("writes at most perSecond lines a second and reports the dropped ones on the next line", () => {
    const lines: Record<string, unknown>[] = [];
    const destination = new Writable({
      write(chunk, _encoding, callback) {
        lines.push(JSON.parse(String(chunk)));
        callback();
      },
    });
    let time = 1_000_000;
    const log = createRateLimitedLog({
      logger: createLogger({ level: "info", destination }),
      level: "info",
      perSecond: 10,
      now: () => time,
    });
    for (let i = 0; i < 25; i++) log({ reason: "unknown_route" }, "request rejected");
    expect(lines).toHaveLength(10);
    expect(lines.every((l) => l.suppressed === undefined)).toBe(true);
    time += 999;
    log({ reason: "unknown_route" }, "request rejected");
    expect(lines).toHaveLength(10);
    time += 1;
    log({ reason: "unknown_route" }, "request rejected");
    expect(lines).toHaveLength(11);
    expect(lines[10]).toMatchObject({ reason: "unknown_route", suppressed: 16, msg: "request rejected" });
    log({ reason: "unknown_route" }, "request rejected");
    expect(lines[11]?.suppressed).toBeUndefined();
  });
});

describe("the server", () => {
  let server: RunningServer;
  beforeAll(async () => {
    server = await startServer();
  });
  afterAll(() => server.close());

  it("counts every refused request but logs a flood of them at a bounded rate", async () => {
    const series = 'http_rejections_total{reason="unknown_route"}';
    const counter = async () => {
      const text = await (await fetch(`${server.baseUrl}/metrics`)).text();
      const line = text.split("\n").find((l) => l.startsWith(`${series} `));
      return line === undefined ? 0 : Number(line.split(" ")[1]);
    };
    const before = await counter();
    const logged = () => server.logs.filter((l) => l.msg === "request rejected").length;
    const loggedBefore = logged();
    const started = Date.now();
    await Promise.all(Array.from({ length: 200 }, (_, i) => fetch(`${server.baseUrl}/no/such/${i}`)));
    const seconds = Math.ceil((Date.now() - started) / 1000) + 1;
    expect(await counter()).toBe(before + 200);
    const lines = logged() - loggedBefore;
    expect(lines).toBeGreaterThan(0);
    expect(lines).toBeLessThanOrEqual(10 * seconds);
  });
});

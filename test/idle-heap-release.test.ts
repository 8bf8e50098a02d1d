import { Registry } from "prom-client";
import { afterEach, describe, expect, it } from "vitest";
import { createIdleHeapRelease } from "../src/idle-heap-release.ts";
import { type MainProcess, startMain } from "./support/main-process.ts";

/**
 * A release driven by a scripted event loop: `busy` lists the utilization each interval reports
 * (the release reads one more right after it collects, to leave its own time out), and the
 * clock moves a second per tick.
 */
function scripted(busy: number[], options: { minGapMs?: number } = {}) {
  let clock = 0;
  let reads = 0;
  const collected: number[] = [];
  const registry = new Registry();
  const release = createIdleHeapRelease({
    collect: () => collected.push(clock),
    utilization: () => busy[reads++] ?? 0,
    now: () => clock,
    registry,
    ...options,
  });
  const tick = () => {
    clock += 1_000;
    return release.tick();
  };
  return { tick, collected, registry, reads: () => reads };
}

describe("the idle heap release's policy", () => {
  it("gives back once after start-up, on the second quiet interval, and not again while idle", () => {
    const loop = scripted([0, 0]);
    expect(loop.tick()).toBe(false);
    expect(loop.tick()).toBe(true);
    for (let i = 0; i < 300; i++) loop.tick();
    expect(loop.collected).toEqual([2_000]);
  });

  it("gives back again after load, once quiet for two intervals and at least minGapMs after the last", async () => {
    // Start-up quiet (release at 2 s, then the discarded read), 3 s of load, quiet from then on.
    const loop = scripted([0, 0, 0.9, 0.5, 0.5, 0.5], { minGapMs: 10_000 });
    for (let i = 0; i < 30; i++) loop.tick();
    // Load ended at 5 s and two quiet intervals followed at 7 s, but 10 s must pass since 2 s.
    expect(loop.collected).toEqual([2_000, 12_000]);
    const text = await loop.registry.metrics();
    expect(text).toMatch(/^heap_idle_releases_total 2$/m);
  });

  it("never releases under light steady traffic that is never quiet two intervals in a row", () => {
    const busy = [0, 0];
    for (let i = 0; i < 200; i++) busy.push(i % 2 === 0 ? 0.05 : 0.01);
    const loop = scripted(busy, { minGapMs: 0 });
    for (let i = 0; i < 200; i++) loop.tick();
    expect(loop.collected).toEqual([2_000]);
  });

  it("does not count its own collection as load", () => {
    // The read right after the collection reports the collection itself (0.9): were it counted,
    // the next quiet stretch would release again.
    const loop = scripted([0, 0, 0.9], { minGapMs: 0 });
    for (let i = 0; i < 20; i++) loop.tick();
    expect(loop.collected).toEqual([2_000]);
    expect(loop.reads()).toBe(21);
  });

  it("stops ticking when stopped", async () => {
    let reads = 0;
    const release = createIdleHeapRelease({
      collect: () => {},
      utilization: () => {
        reads += 1;
        return 0;
      },
      intervalMs: 5,
    });
    release.start();
    await new Promise((r) => setTimeout(r, 60));
    release.stop();
    const seen = reads;
    expect(seen).toBeGreaterThan(0);
    await new Promise((r) => setTimeout(r, 60));
    expect(reads).toBe(seen);
  });
});

describe("the service gives idle memory back (main.ts)", () => {
  let main: (MainProcess & { port: number }) | undefined;
  afterEach(() => main?.kill());

  const metric = async (port: number) => {
    const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    return /^heap_idle_releases_total (\d+)$/m.exec(text)?.[1];
  };

  it("with --expose-gc (as npm start runs it): once it has gone quiet after start-up, and counts it", async () => {
    main = await startMain({ LOG_LEVEL: "debug" }, ["--expose-gc"]);
    const prices = await fetch(`http://127.0.0.1:${main.port}/v1/tokens/prices`);
    expect(prices.status).toBe(200);
    const line = await main.waitForLog((l) => l.msg === "idle: memory given back");
    expect(line).toMatchObject({ ms: expect.any(Number), rss_before_mb: expect.any(Number) });
    // What the collection gave back: never more RSS than before it.
    expect(line.rss_after_mb as number).toBeLessThanOrEqual(line.rss_before_mb as number);
    expect(await metric(main.port)).toBe("1");
    // And it still serves.
    expect((await fetch(`http://127.0.0.1:${main.port}/v1/tokens/prices`)).status).toBe(200);
  });

  it("without --expose-gc: says so at debug level and counts nothing", async () => {
    main = await startMain({ LOG_LEVEL: "debug" });
    await main.waitForLog((l) => l.msg === "idle memory is not given back: node runs without --expose-gc");
    await new Promise((r) => setTimeout(r, 3_000));
    expect(main.logLines().some((l) => l.msg === "idle: memory given back")).toBe(false);
    expect(await metric(main.port)).toBeUndefined();
  });
});
